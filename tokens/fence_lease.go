package tokens

import (
	"context"
	"errors"
	"time"
)

// Acquire grants a lease through the store (see LeaseStore.Acquire) and
// brings the Fence's cache of resource name up to the grant's epoch, so a
// holder fenced by the grant is refused from memory at once.
func (f *Fence) Acquire(ctx context.Context, name, holder string, ttl time.Duration) (Grant, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	st := f.state(name)
	if st == nil {
		return f.store.Acquire(ctx, name, holder, ttl)
	}
	if !f.exclusive {
		g, err := f.store.Acquire(ctx, name, holder, ttl)
		if err == nil {
			raise(&st.hwm, g.Epoch)
		}
		return g, err
	}
	// Over an exclusive store the cache must stay exact: hold the
	// resource's lock across the grant, as Admit does across an advance,
	// and mark the cache unready first. The grant is visible in the store
	// (a lease read, a fence read) the moment it commits; from then until
	// the cache holds its epoch, admissions must wait on the lock rather
	// than answer from memory at the old epoch.
	st.mu.Lock()
	defer st.mu.Unlock()
	wasReady := st.ready.Load()
	st.ready.Store(false)
	g, err := f.store.Acquire(ctx, name, holder, ttl)
	switch {
	case err == nil:
		st.hwm.Store(g.Epoch)
		st.ready.Store(true)
	case isLeaseVerdict(err):
		st.ready.Store(wasReady) // nothing changed
	}
	// Otherwise the outcome is unknown: reload from the store next time.
	return g, err
}

// isLeaseVerdict reports whether err is a lease store's answer, after
// which nothing changed, rather than a failure with an unknown outcome.
func isLeaseVerdict(err error) bool {
	var held *LeaseHeldError
	return errors.As(err, &held) || errors.Is(err, ErrInvalidLease) || errors.Is(err, ErrInvalidResource)
}

// Renew renews a lease through the store; see LeaseStore.Renew.
func (f *Fence) Renew(ctx context.Context, name, holder string, epoch int64) (Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	return f.store.Renew(ctx, name, holder, epoch)
}

// Release releases a lease through the store; see LeaseStore.Release.
func (f *Fence) Release(ctx context.Context, name, holder string, epoch int64) error {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	return f.store.Release(ctx, name, holder, epoch)
}

// Lease reads a lease through the store; see LeaseStore.Lease.
func (f *Fence) Lease(ctx context.Context, name string) (Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	return f.store.Lease(ctx, name)
}
