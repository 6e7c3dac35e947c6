package tokens

import (
	"context"
	"fmt"
)

// RawOnLeasedError reports a raw epoch presented for a resource this
// gateway leases (a lease of its name was ever granted here): a raw epoch
// is a number anyone can send, and the lease's current epoch is no secret,
// so taking it would let any client write as the lease's holder. The
// holder's signed token is required, unless the route trusts its clients
// (Presented.RawOnLeased).
type RawOnLeasedError struct {
	Resource string
}

func (e *RawOnLeasedError) Error() string {
	return fmt.Sprintf("resource %q is leased through this gateway: a raw epoch cannot write to it, the lease's signed token is required", e.Resource)
}

// Raw reports whether the claims are a raw epoch's: no resource, holder or
// expiry, which every signed token carries.
func (c Claims) Raw() bool { return c.Resource == "" && c.Holder == "" && c.Expires.IsZero() }

// refusesLeased reports whether a write presenting claims must be refused
// on a leased resource: a raw epoch on a route that does not trust its
// clients with leased resources.
func (p Presented) refusesLeased(claims Claims) bool { return claims.Raw() && !p.RawOnLeased }

// leasedVerdict decides, after the fence did, on a write that must not
// reach a leased resource (refuse is set): it is refused when st knows the
// resource leased or when the admission's DeliverBy says a live grant bounds
// it (only a leased resource's admissions have one); the fence's own verdict
// stands otherwise.
//
// Knowing a resource leased costs no store call: the state learns it from
// every grant through this Fence, every load over an exclusive store and
// every confirming read over a shared store (learnLeased), and keeps it (a lease record is
// never removed), so once known the write is refused from memory before any
// other check. A raw write that races the first grant of its resource is
// safe in either order: decided before the grant, it was admitted at an
// epoch no higher than the HWM the grant then exceeds, so it is ordered
// before the lease like any write before a takeover and cannot pass for the
// holder's; decided after, it sees the lease. Over an exclusive store
// Fence.Acquire publishes the lease before the HWM it raised, so a write
// that reads the new HWM from memory also reads the lease; over a shared
// store a write at the grant's epoch is confirmed by a store read that
// started after it arrived, which shows the grant.
func leasedVerdict(st *resourceState, refuse bool, resource string, deliverBy bool, err error) error {
	if !refuse {
		return err
	}
	if err == nil && deliverBy {
		st.leased.Store(true)
	}
	if st.leased.Load() {
		return &RawOnLeasedError{Resource: resource}
	}
	return err
}

// learnLeased notes in st that the resource is leased when the read r
// says so; nothing unlearns it.
func learnLeased(st *resourceState, r markRead) {
	if r.Lease.Leased() {
		st.leased.Store(true)
	}
}

// learnLeasedBeforeStale, over a shared store, reads whether resource is
// leased before a raw epoch is refused as stale from memory, while this
// replica does not know it leased: another replica may have granted it, and
// answering 412 below the high-water mark but 403 at or above it would let
// anyone find the lease's epoch by bisection. The read is a coalesced
// confirmation, and only until the lease is known (nothing unlearns it); if
// it fails, the stale refusal stands.
func (f *Fence) learnLeasedBeforeStale(ctx context.Context, st *resourceState, resource string, err error) {
	if st.leased.Load() || !isA[*StaleEpochError](err) {
		return
	}
	if r, cerr := f.confirm(ctx, resource); cerr == nil {
		raise(&st.hwm, r.HWM)
		learnLeased(st, r)
	}
}
