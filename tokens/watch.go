package tokens

import (
	"context"
	"sync"
)

// LeaseNotifier tells of changes to leases made through any client of a
// store: grants, renewals and releases, and, where the store sees them,
// lapses. A notification says only that the lease may have changed; the
// subscriber reads it to learn how. Notifications may be merged or
// spurious; when the store cannot vouch that none was missed (a dropped
// connection), it notifies every subscriber once it is back.
type LeaseNotifier interface {
	// SubscribeLease returns a channel that receives a value after lease
	// name may have changed, until ctx ends. Its buffer of one merges
	// pending notifications.
	SubscribeLease(ctx context.Context, name string) (<-chan struct{}, error)
}

// Notifications fans lease-change notifications out to the subscribers in
// this process; every store's LeaseNotifier uses one.
type Notifications struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

// Subscribe registers a subscriber of name until ctx ends.
func (n *Notifications) Subscribe(ctx context.Context, name string) <-chan struct{} {
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	if n.subs == nil {
		n.subs = make(map[string]map[chan struct{}]struct{})
	}
	if n.subs[name] == nil {
		n.subs[name] = make(map[chan struct{}]struct{})
	}
	n.subs[name][ch] = struct{}{}
	n.mu.Unlock()
	context.AfterFunc(ctx, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.subs[name], ch)
		if len(n.subs[name]) == 0 {
			delete(n.subs, name)
		}
	})
	return ch
}

// Notify tells every subscriber of name.
func (n *Notifications) Notify(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.subs[name] {
		poke(ch)
	}
}

// NotifyAll tells every subscriber of every lease.
func (n *Notifications) NotifyAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, subs := range n.subs {
		for ch := range subs {
			poke(ch)
		}
	}
}

// poke sends on ch unless a value is pending there already.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// LeaseChange is one recorded change of a lease: a grant, a renewal or a
// release, made through any client of the store. Changes are never merged:
// two renewals a millisecond apart are two changes.
type LeaseChange struct {
	// Seq identifies the change: a store revision or sequence that rises
	// with every change of the lease, in the order the store made them.
	Seq int64
	// Lease is the lease as the change left it: Held after a grant or a
	// renewal (ExpiresAt the deadline it set, on the store's clock or an
	// estimate of it), Released after a release of a live grant. A change
	// that ended nothing live (a retried release) has neither.
	Lease Lease
	// Gap reports that the store no longer keeps every change between the
	// Seq the watch asked to follow and this one, which is the latest: what
	// came between is lost.
	Gap bool
}

// FromLatest, as LeaseWatcher.WatchLease's after, starts a watch with the
// latest change.
const FromLatest int64 = -1

// LeaseWatcher streams every change of a lease, in order, whichever
// client of the store made it.
type LeaseWatcher interface {
	// WatchLease sends on the returned channel every change of lease name
	// with Seq above after, in order, then every later change as the store
	// records it, until ctx ends or the store can no longer follow it (a
	// broken connection); then it closes the channel, and the caller
	// watches again from the last Seq it received. With after FromLatest
	// it starts with the latest change (the lease's state now), if there
	// is one; with 0, with the first change the store keeps. When changes
	// after after are no longer kept, or after is above the latest change
	// the store has for the lease (ids restart with a restored or new
	// store), it starts with the latest one, Gap set, whose Seq may then be
	// at or below after, and follows the changes after it. Lapses are not
	// changes: a watcher learns them
	// from the ExpiresAt it received and a read of the lease.
	WatchLease(ctx context.Context, name string, after int64) (<-chan LeaseChange, error)
}
