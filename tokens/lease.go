package tokens

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Lease is the state of one named lease. A lease named N fences the
// resource N: every grant raises the resource's HWM to the grant's epoch.
type Lease struct {
	Name   string
	Holder string
	// Epoch rises on every grant (acquire), never on renewal.
	Epoch int64
	// TTL is the duration granted at acquire; every renewal extends the
	// lease by it, measured from the renewal, on the store's clock.
	TTL time.Duration
	// LockDelay is the grant's lock-delay: after it lapses uncleanly, the
	// lease is granted to nobody for this long (see Terms).
	LockDelay time.Duration
	// ExpiresAt is when the lease lapses, on the store's clock (UTC). For
	// a store that keeps deadlines as durations (etcd) it is an estimate
	// taken when the lease was read.
	ExpiresAt time.Time
	// Held reports whether the lease was live when read.
	Held bool
	// Released reports that the grant ended by a release (not a lapse).
	Released bool
	// Version changes with every grant, renewal and release of the lease:
	// two reads with one Version saw the same lease.
	Version int64
	// Owner is the Name of the Caller that acquired this grant; empty for
	// an unowned grant (acquired by an anonymous caller, or before owners
	// were recorded). Only callers for which Caller.MayUse(Owner) holds may
	// renew or release it, or re-acquire it for the same holder while live.
	Owner string
}

// Grant is the result of a successful acquire.
type Grant struct {
	Lease
	// Previous is the lease as it was before this grant, if there was one:
	// a takeover when Previous.Holder differs from the new holder.
	Previous *Lease
}

// LeaseStore is the token authority's state: named leases whose epoch rises
// on every grant. Every deadline lives on the store's clock; the clocks of
// clients and gateway replicas never decide who leads.
//
// Every change names its Caller, and each grant records its caller's Name as
// the lease's Owner, in the same atomic step that decides the change: the
// binding holds across replicas and restarts. With the zero Caller
// throughout, no lease has an owner and no change is refused for one.
type LeaseStore interface {
	// Acquire grants the lease name to holder for t.TTL, with lock-delay
	// t.LockDelay, when it is free, expired or already held by holder, and
	// records by.Name as its Owner.
	// The grant's epoch is one above both the lease's previous epoch and
	// the HWM of resource name, and in the same atomic step the HWM of name
	// is raised to it and recorded as the highest epoch issued for name.
	// It changes nothing and returns:
	//   - *LeaseHeldError when another holder's lease is live;
	//   - *LeaseOwnedError when holder's own lease is live but by may not
	//     use it (Caller.MayUse of its Owner is false);
	//   - *LockDelayError when the previous grant lapsed (expired, was not
	//     released) less than its own LockDelay ago, whoever asks;
	//   - *EpochExhaustedError when the lease's epoch or the HWM is already
	//     2^63-1, so no higher epoch exists. That is a verdict, not a
	//     failure: retrying cannot succeed.
	// A free or expired lease may be taken over by any caller.
	Acquire(ctx context.Context, name, holder string, t Terms, by Caller) (Grant, error)

	// Renew extends holder's live lease at epoch by its TTL, from now on the
	// store's clock. It never changes the epoch or the owner. When the lease
	// was never acquired or is another holder's or another epoch's, it
	// returns *LeaseLostError; when it is holder's at epoch but by may not
	// use it, *LeaseOwnedError (whether or not it is still live); when it
	// expired, *LeaseLostError. Each changes nothing. Renewing twice is as
	// safe as renewing once.
	Renew(ctx context.Context, name, holder string, epoch int64, by Caller) (Lease, error)

	// Release ends holder's lease at epoch now, keeping its epoch so the
	// next grant raises it. Releasing a live lease is a clean end: the next
	// grant skips the lock-delay. Releasing a lease that holder held at epoch and
	// that already lapsed or was released succeeds again, and never shortens
	// the lock-delay of a lapse: that runs to its end, however often and
	// by whomever the lapsed grant is released. When another
	// holder or epoch was granted since, or the lease was never acquired,
	// it returns *LeaseLostError; when the grant is holder's at epoch but
	// by may not use it, *LeaseOwnedError. Each changes nothing.
	Release(ctx context.Context, name, holder string, epoch int64, by Caller) error

	// Lease returns the lease's state, Owner included, or ErrLeaseNotFound
	// if it was never acquired.
	Lease(ctx context.Context, name string) (Lease, error)
}

// ErrLeaseNotFound means the lease was never acquired.
var ErrLeaseNotFound = errors.New("lease not found")

// ErrInvalidLease means a lease request is malformed: an empty or invalid
// holder, a non-positive TTL or epoch.
var ErrInvalidLease = errors.New("invalid lease request")

// LeaseHeldError reports an acquire refused because another holder's lease
// is live.
type LeaseHeldError struct {
	Name      string
	Holder    string
	Epoch     int64
	ExpiresAt time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("lease %q is held by %q at epoch %d until %s", e.Name, e.Holder, e.Epoch,
		e.ExpiresAt.UTC().Format(time.RFC3339Nano))
}

// LeaseLostError reports a renew or release by a holder that no longer
// holds the lease at the epoch it named.
type LeaseLostError struct {
	Name    string
	Holder  string // the caller
	Epoch   int64  // the epoch the caller named
	Current Lease  // the lease as the store has it (zero if never acquired)
	Reason  string
}

func (e *LeaseLostError) Error() string {
	return fmt.Sprintf("lease %q at epoch %d is not held by %q: %s", e.Name, e.Epoch, e.Holder, e.Reason)
}

// EpochNotIssuedError reports an epoch above the highest epoch the token
// authority ever issued for the resource. Such an epoch is refused and never
// raises the HWM.
type EpochNotIssuedError struct {
	Resource  string
	Presented int64
	Issued    int64
}

func (e *EpochNotIssuedError) Error() string {
	return fmt.Sprintf("epoch %d for %q was never issued (highest issued: %d)", e.Presented, e.Resource, e.Issued)
}

// EpochExhaustedError reports an acquire refused because no epoch above the
// lease's epoch and the resource's HWM exists: one of them is already
// 2^63-1 (a raw write may have put it there on a resource never leased).
// Nothing was changed, and no later acquire of the name can succeed: the
// name is spent, and its holders must move to another name.
type EpochExhaustedError struct {
	Name  string
	Epoch int64 // the highest of the lease's epoch and the HWM: 2^63-1
}

func (e *EpochExhaustedError) Error() string {
	return fmt.Sprintf("lease %q cannot be granted: epoch %d is the highest epoch, none is left above it", e.Name, e.Epoch)
}

// MaxHolderLen is the longest holder name, in bytes.
const MaxHolderLen = 256

// MaxLeaseTTL is the longest lease a store grants.
const MaxLeaseTTL = 24 * time.Hour

// MinLeaseTTL is the shortest lease a store grants.
const MinLeaseTTL = time.Second

// ValidateLeaseRequest checks the arguments shared by lease operations; the
// caller's name is checked by ValidateOwner.
func ValidateLeaseRequest(name, holder string, by Caller) error {
	if err := ValidateResource(name); err != nil {
		return err
	}
	if holder == "" || len(holder) > MaxHolderLen {
		return fmt.Errorf("%w: holder must be 1 to %d bytes", ErrInvalidLease, MaxHolderLen)
	}
	if err := ValidateResource(holder); err != nil {
		return fmt.Errorf("%w: holder: %w", ErrInvalidLease, err)
	}
	return ValidateOwner(by.Name)
}

// ValidateAcquire checks the arguments of an acquire: those of
// ValidateLeaseRequest, and terms ValidateTerms accepts.
func ValidateAcquire(name, holder string, t Terms, by Caller) error {
	if err := ValidateLeaseRequest(name, holder, by); err != nil {
		return err
	}
	return ValidateTerms(t)
}

// ValidateHeld checks the arguments of a renew or release: those of
// ValidateLeaseRequest, and the epoch held, which is positive.
func ValidateHeld(name, holder string, epoch int64, by Caller) error {
	if err := ValidateLeaseRequest(name, holder, by); err != nil {
		return err
	}
	if epoch <= 0 {
		return fmt.Errorf("%w: epoch must be positive, got %d", ErrInvalidLease, epoch)
	}
	return nil
}

// LostReason says why holder at epoch does not hold a lease whose record
// is cur (found false: there is none), for a *LeaseLostError; "" when the
// record names them (the lease may still have expired).
func LostReason(found bool, cur Lease, holder string, epoch int64) string {
	switch {
	case !found:
		return "never acquired"
	case cur.Holder != holder || cur.Epoch != epoch:
		r := fmt.Sprintf("held by %q at epoch %d", cur.Holder, cur.Epoch)
		if !cur.Held {
			r += " (expired)"
		}
		return r
	}
	return ""
}

// TTLLimiter is implemented by a LeaseStore that can keep only some lease
// TTLs exactly (etcd: whole seconds, of at least the cluster's minimum).
// Such a store refuses any other TTL with an error wrapping
// ErrInvalidLease, rather than keep a lease longer than the ExpiresAt it
// reports; callers may check a TTL first with ValidateStoreTTL.
type TTLLimiter interface {
	// MinLeaseTTL is the shortest TTL the store keeps exactly, at least
	// the package's MinLeaseTTL.
	MinLeaseTTL() time.Duration
	// LeaseTTLStep is the step of the TTLs it keeps exactly: each is a
	// whole multiple of it.
	LeaseTTLStep() time.Duration
}

// LeaseTTLRange returns the shortest TTL store grants and the step of its
// TTLs: MinLeaseTTL and LeaseResolution unless store is a TTLLimiter.
func LeaseTTLRange(store any) (lo, step time.Duration) {
	lo, step = MinLeaseTTL, LeaseResolution
	if l, ok := store.(TTLLimiter); ok {
		lo, step = max(lo, l.MinLeaseTTL()), max(step, l.LeaseTTLStep())
	}
	return lo, step
}

// ValidateStoreTTL checks ttl as ValidateTTL does, and against the range
// store keeps exactly (LeaseTTLRange): an error wrapping ErrInvalidLease
// that names the range otherwise.
func ValidateStoreTTL(store any, ttl time.Duration) error {
	if err := ValidateTTL(ttl); err != nil {
		return err
	}
	lo, step := LeaseTTLRange(store)
	if ttl < lo || ttl%step != 0 {
		return fmt.Errorf("%w: ttl must be from %s to %s in multiples of %s on this store, got %s", ErrInvalidLease, lo, MaxLeaseTTL, step, ttl)
	}
	return nil
}

// ValidateTTL checks a lease TTL: at least MinLeaseTTL, at most
// MaxLeaseTTL, in whole milliseconds (LeaseResolution).
func ValidateTTL(ttl time.Duration) error {
	if ttl < MinLeaseTTL || ttl > MaxLeaseTTL || ttl%LeaseResolution != 0 {
		return fmt.Errorf("%w: ttl must be from %s to %s in whole milliseconds, got %s", ErrInvalidLease, MinLeaseTTL, MaxLeaseTTL, ttl)
	}
	return nil
}
