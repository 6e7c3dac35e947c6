package tokens

import (
	"fmt"
	"time"
)

// ClockRateBound is the largest rate error this package assumes between a
// replica's monotonic clock and the store's clock: 1%. A grant a store
// says stays live for d from a read is taken to stay live for
// d*(1-ClockRateBound) on the replica's clock, counted from before the read
// was sent.
const ClockRateBound = 0.01

// Terms are what an acquire asks for.
type Terms struct {
	// TTL is the lease's duration; every renewal extends it by TTL.
	TTL time.Duration
	// LockDelay, when positive, keeps the lease from being granted to
	// anyone for this long after the grant lapses uncleanly (expires
	// rather than being released): how long the upstream may still act on
	// a write it received whole before the lapse. 0: takeover at expiry.
	LockDelay time.Duration
}

// MaxLockDelay is the longest lock-delay a store keeps.
const MaxLockDelay = time.Hour

// LeaseResolution is the step of lease TTLs and lock-delays: every store
// records them in whole milliseconds, so a duration finer than that could
// not be kept as asked. (etcd keeps the lease and the lock-delay alive with
// etcd leases of whole seconds, rounded up: a rival may wait up to a second
// longer each, never less, while the holder's deadline stays exact.)
const LeaseResolution = time.Millisecond

// ValidateTerms checks a TTL (see ValidateTTL) and a lock-delay from 0 to
// MaxLockDelay in whole milliseconds (LeaseResolution).
func ValidateTerms(t Terms) error {
	if err := ValidateTTL(t.TTL); err != nil {
		return err
	}
	if t.LockDelay < 0 || t.LockDelay > MaxLockDelay || t.LockDelay%LeaseResolution != 0 {
		return fmt.Errorf("%w: lock_delay must be from 0 to %s in whole milliseconds, got %s", ErrInvalidLease, MaxLockDelay, t.LockDelay)
	}
	return nil
}

// Mark is a resource's fencing state as one linearizable store read found
// it: its HWM and the current grant of the lease of the same name.
type Mark struct {
	HWM   int64
	Lease LeaseLife
}

// LeaseLife is how long a lease's current grant stays live, as a store
// read found it.
type LeaseLife struct {
	// Epoch is the grant's epoch; 0 when no lease of the name was ever
	// granted (the resource is not leased).
	Epoch int64
	// Left is how long the grant stays live on the store's clock, counted
	// from a moment no earlier than the call that read it: a lower bound,
	// 0 once it lapsed or was released.
	Left time.Duration
	// Released reports that the grant ended by release rather than lapse.
	Released bool
}

// Leased reports whether a lease of the resource's name was ever granted.
func (l LeaseLife) Leased() bool { return l.Epoch > 0 }

// LeaseLapsedError reports a write on a leased resource whose epoch is the
// current grant's, but whose lease is no longer live: it lapsed or was
// released, and nobody may have taken over yet. It is a stale epoch: see
// StaleEpochError, which it is presented as.
func lapsedError(resource string, epoch int64, released bool) *StaleEpochError {
	how := "lapsed"
	if released {
		how = "was released"
	}
	return &StaleEpochError{Resource: resource, Presented: epoch, Current: epoch,
		Reason: fmt.Sprintf("the lease granted at epoch %d %s", epoch, how)}
}

// LockDelayError reports an acquire refused because the lease's previous
// grant lapsed uncleanly less than its lock-delay ago.
type LockDelayError struct {
	Name   string
	Holder string // the previous grant's holder
	Epoch  int64  // the previous grant's epoch
	// Left is how long the delay still runs, on the store's clock (an
	// upper bound, rounded up to the store's resolution).
	Left time.Duration
}

func (e *LockDelayError) Error() string {
	return fmt.Sprintf("lease %q lapsed at epoch %d (holder %q) and is in its lock-delay for %s more",
		e.Name, e.Epoch, e.Holder, e.Left.Round(time.Millisecond))
}
