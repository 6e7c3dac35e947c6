package kubesource

import (
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/fencegw/fencegw/tokens/source"
)

// ErrBadLease is wrapped by the error Current returns for a Lease whose
// spec no election writes: a negative leaseTransitions or
// leaseDurationSeconds. The API server's validation refuses both, so only a
// broken server or a bug gives one; the read fails closed.
var ErrBadLease = errors.New("malformed Lease spec")

// leaderOf reads the leader a Lease's spec names, judged at now on the
// gateway's clock with margin taken off its expiry:
//
//   - no holderIdentity, or an empty one: no leader (source.Leader{});
//   - otherwise Held, Holder holderIdentity, Epoch leaseTransitions (0 when
//     absent: client-go gives the first leader of a new Lease 0), and
//     Live when renewTime (or acquireTime, when renewTime is absent) plus
//     leaseDurationSeconds, less margin, is after now. A Lease without
//     either time or without a positive leaseDurationSeconds is not live.
//
// A negative leaseTransitions or leaseDurationSeconds is an error
// wrapping ErrBadLease.
func leaderOf(spec coordinationv1.LeaseSpec, now time.Time, margin time.Duration) (source.Leader, error) {
	if spec.HolderIdentity == nil || *spec.HolderIdentity == "" {
		return source.Leader{}, nil
	}
	l := source.Leader{Held: true, Holder: *spec.HolderIdentity}
	if spec.LeaseTransitions != nil {
		if *spec.LeaseTransitions < 0 {
			return source.Leader{}, fmt.Errorf("leaseTransitions %d: %w", *spec.LeaseTransitions, ErrBadLease)
		}
		l.Epoch = int64(*spec.LeaseTransitions)
	}
	if spec.LeaseDurationSeconds != nil && *spec.LeaseDurationSeconds < 0 {
		return source.Leader{}, fmt.Errorf("leaseDurationSeconds %d: %w", *spec.LeaseDurationSeconds, ErrBadLease)
	}
	expiry, ok := expiryOf(spec)
	l.Live = ok && now.Before(expiry.Add(-margin))
	return l, nil
}

// expiryOf returns when the Lease lapses on the clock of the leader that
// renewed it: renewTime (else acquireTime) plus leaseDurationSeconds; ok
// is false without a time or a positive duration.
func expiryOf(spec coordinationv1.LeaseSpec) (time.Time, bool) {
	if spec.LeaseDurationSeconds == nil || *spec.LeaseDurationSeconds <= 0 {
		return time.Time{}, false
	}
	at := spec.RenewTime
	if at == nil {
		at = spec.AcquireTime
	}
	if at == nil {
		return time.Time{}, false
	}
	return at.Add(time.Duration(*spec.LeaseDurationSeconds) * time.Second), true
}
