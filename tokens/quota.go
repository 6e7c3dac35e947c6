package tokens

import (
	"context"
	"fmt"
	"time"
)

// LiveCount is how many leases were live when a store counted them: held,
// or lapsed without a release and still in their lock-delay (a name that
// nobody may take is as good as held).
type LiveCount struct {
	// Total counts every live lease.
	Total int
	// ByOwner counts the live leases per Owner; unowned leases are under "".
	ByOwner map[string]int
}

// LeaseCounter counts live leases. Every store implements it; the gateway
// calls it off the data plane (on a lease acquire, at most once per cache
// period), never on an admission.
type LeaseCounter interface {
	// LiveLeases counts the live leases as of one read of the store.
	LiveLeases(ctx context.Context) (LiveCount, error)
}

// LeaseQuotaError reports an acquire refused because it would make one
// live lease more than a cap allows. Nothing was changed; a release or a
// lapse frees a slot.
type LeaseQuotaError struct {
	Name   string // the lease asked for
	Caller string // the API key's name; "" for the global cap or an anonymous caller
	Scope  string // "key" or "global"
	Live   int    // the live leases counted
	Max    int    // the cap
	// RetryAfter is a hint: when the count is next read.
	RetryAfter time.Duration
}

func (e *LeaseQuotaError) Error() string {
	if e.Scope == "key" {
		return fmt.Sprintf("lease %q: API key %q has %d live leases, its cap is %d", e.Name, e.Caller, e.Live, e.Max)
	}
	return fmt.Sprintf("lease %q: the store has %d live leases, the cap is %d", e.Name, e.Live, e.Max)
}
