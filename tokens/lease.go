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
	// ExpiresAt is when the lease lapses, on the store's clock (UTC). For
	// a store that keeps deadlines as durations (etcd) it is an estimate
	// taken when the lease was read.
	ExpiresAt time.Time
	// Held reports whether the lease was live when read.
	Held bool
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
type LeaseStore interface {
	// Acquire grants the lease name to holder for ttl when it is free,
	// expired or already held by holder. The grant's epoch is one above
	// both the lease's previous epoch and the HWM of resource name, and in
	// the same atomic step the HWM of name is raised to it and recorded as
	// the highest epoch issued for name. When another holder's lease is
	// live it returns *LeaseHeldError and changes nothing.
	Acquire(ctx context.Context, name, holder string, ttl time.Duration) (Grant, error)

	// Renew extends holder's live lease at epoch by its TTL, from now on the
	// store's clock. It never changes the epoch. When the lease expired, is
	// held by another holder or at another epoch, it returns *LeaseLostError
	// and changes nothing. Renewing twice is as safe as renewing once.
	Renew(ctx context.Context, name, holder string, epoch int64) (Lease, error)

	// Release ends holder's lease at epoch now, keeping its epoch so the
	// next grant raises it. Releasing a lease that holder held at epoch and
	// that already lapsed or was released succeeds again. When another
	// holder or epoch was granted since, it returns *LeaseLostError.
	Release(ctx context.Context, name, holder string, epoch int64) error

	// Lease returns the lease's state, or ErrLeaseNotFound if it was never
	// acquired.
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

// MaxHolderLen is the longest holder name, in bytes.
const MaxHolderLen = 256

// MaxLeaseTTL is the longest lease a store grants.
const MaxLeaseTTL = 24 * time.Hour

// ValidateLeaseRequest checks the arguments shared by lease operations.
func ValidateLeaseRequest(name, holder string) error {
	if err := ValidateResource(name); err != nil {
		return err
	}
	if holder == "" || len(holder) > MaxHolderLen {
		return fmt.Errorf("%w: holder must be 1 to %d bytes", ErrInvalidLease, MaxHolderLen)
	}
	if err := ValidateResource(holder); err != nil {
		return fmt.Errorf("%w: holder: %w", ErrInvalidLease, err)
	}
	return nil
}

// ValidateTTL checks a lease TTL: at least one second, at most MaxLeaseTTL,
// whole seconds or milliseconds as the store supports.
func ValidateTTL(ttl time.Duration) error {
	if ttl < time.Second || ttl > MaxLeaseTTL {
		return fmt.Errorf("%w: ttl must be from 1s to %s, got %s", ErrInvalidLease, MaxLeaseTTL, ttl)
	}
	return nil
}
