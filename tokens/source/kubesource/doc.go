// Package kubesource is an epoch source backed by Kubernetes Leases
// (coordination.k8s.io/v1), the lock client-go's leaderelection package
// takes with a LeaseLock, and with it most controllers and operators.
//
// A resource's Lease is named by Options.Lease (the resource's own name by
// default) in Options.Namespace. Its spec says:
//
//   - Epoch: spec.leaseTransitions, which leaderelection increments each
//     time the holder changes. The first leader of a new Lease gets 0, a
//     real epoch this source vouches for (source.Leader.Held, not the
//     epoch's sign, says whether there is a leader).
//   - Holder: spec.holderIdentity. A Lease that does not exist, or whose
//     holderIdentity is empty (a leader that released it), has no leader.
//   - Live: renewTime + leaseDurationSeconds - SkewMargin is still ahead
//     on the gateway's clock.
//
// Whose clock: renewTime is written by the leader from its own clock, and
// the gateway judges it with its own. A gateway clock behind the leader's
// by less than SkewMargin (DefaultSkewMargin, 1 s) never takes a lapsed
// Lease for live; one ahead takes it for lapsed early, which only refuses
// writes. Liveness is a second line of defence anyway: a takeover raises
// leaseTransitions, and from then on the old leader's epoch is below the
// source's and refused whatever the clocks say.
//
// Freshness: every read is a GET of the Lease without resourceVersion,
// which the API server serves with a quorum read from etcd, not from its
// watch cache; the answer is the Lease as it was at some instant between
// the request and its answer. source.Coalesce shares such reads only among
// callers that asked before the read started, so a check sees every
// takeover committed before it was asked, and the staleness of a verdict
// is bounded by the read's own duration (at most the route's source
// timeout).
//
// The caveat client-go leaves: leaderelection keeps leaseTransitions when
// the same identity acquires the Lease again (after a restart with the
// same identity, or after its own Lease lapsed), so two terms of one
// identity share an epoch and the gateway cannot tell them apart. Give
// each process run a unique identity (a hostname plus a random suffix, as
// leaderelection's examples do). And leaderelection alone gives no
// fencing: a leader that stalls past its lease keeps writing until it
// notices; this source is what refuses its writes.
package kubesource
