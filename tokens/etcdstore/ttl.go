package etcdstore

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// DefaultMinLeaseTTL is etcd's shortest lease TTL with its default election
// timeout (1s): one and a half election timeouts, rounded up to whole
// seconds. A cluster with a longer election timeout grants no shorter lease.
const DefaultMinLeaseTTL = 2 * time.Second

var _ tokens.TTLLimiter = (*Store)(nil)

// MinLeaseTTL is the shortest lease TTL the Store grants: etcd's minimum,
// DefaultMinLeaseTTL until a grant showed the cluster's to be longer. It
// implements tokens.TTLLimiter, so that a lease's etcd TTL is exactly its
// TTL and the lease lapses at the ExpiresAt reported, not later.
func (s *Store) MinLeaseTTL() time.Duration {
	return max(DefaultMinLeaseTTL, time.Duration(s.minTTL.Load())*time.Second)
}

// LeaseTTLStep is the step of the lease TTLs the Store grants: etcd keeps
// TTLs in whole seconds. It implements tokens.TTLLimiter.
func (s *Store) LeaseTTLStep() time.Duration { return time.Second }

// checkGranted checks that etcd granted the TTL asked (want seconds), not
// one raised to a cluster minimum above MinLeaseTTL: otherwise it learns
// that minimum and returns an error wrapping tokens.ErrInvalidLease.
func (s *Store) checkGranted(want, got int64) error {
	if got == want {
		return nil
	}
	for {
		cur := s.minTTL.Load()
		if got <= cur || s.minTTL.CompareAndSwap(cur, got) {
			break
		}
	}
	return fmt.Errorf("%w: etcd granted a lease of %ds for a TTL of %ds: its minimum TTL is %s", tokens.ErrInvalidLease, got, want, s.MinLeaseTTL())
}

// lapsing reports whether the live grant in st has less than a second left
// on its etcd lease, or has lapsed though etcd has not deleted its keys yet
// (it does so up to about half a second late): a release then is too late
// to be told from a lapse, so it counts as one. etcd reports what is left
// in whole seconds, rounded down.
func (s *Store) lapsing(ctx context.Context, st leaseState) (bool, error) {
	resp, err := s.cli.TimeToLive(ctx, st.aliveID)
	switch {
	case isLeaseNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("reading the TTL left of etcd lease %x: %w", int64(st.aliveID), err)
	}
	return resp.TTL < 1, nil
}
