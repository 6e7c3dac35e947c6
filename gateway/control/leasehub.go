package control

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// leaseHub follows one lease's changes in the store and fans them out to
// its watchers. Its goroutine alone reads the store: a watch of the lease
// (tokens.LeaseWatcher) and, when a grant's expiry passes, one read to
// learn whether it lapsed. Every change becomes its own event; events go
// to each watcher's buffer without blocking, and a watcher whose buffer is
// full is dropped.
type leaseHub struct {
	hub    *watchHub
	name   string
	cancel context.CancelFunc
	done   chan struct{}
	// resumed: the hub's store watch resumed from its first watcher's id.
	resumed bool

	mu     sync.Mutex
	subs   map[*watcher]struct{}
	events []leaseEvent // the last keptEvents, oldest first
	state  *leaseEvent  // the event that says the lease's state now
	// Only the hub's goroutine uses these.
	cur    tokens.Lease // the lease as the last change left it
	seq    int64        // the last change's Seq (0: none yet)
	lapsed bool         // cur's lapse was reported
}

// newLeaseHub starts following name; a first watcher that has seen the
// events up to last (ok) has the store replay the changes since.
func newLeaseHub(h *watchHub, name string, last eventID, ok bool) *leaseHub {
	ctx, cancel := context.WithCancel(context.Background())
	lh := &leaseHub{hub: h, name: name, cancel: cancel, done: make(chan struct{}), subs: make(map[*watcher]struct{}), resumed: ok}
	from := tokens.FromLatest
	if ok {
		from = last.seq - 1 // the change last names comes first: what it left is the state to diff against
	}
	go lh.run(ctx, from)
	return lh
}

// add registers w and returns its backlog; see watchHub.subscribe.
func (lh *leaseHub) add(w *watcher, resume bool) []leaseEvent {
	lh.mu.Lock()
	defer lh.mu.Unlock()
	lh.subs[w] = struct{}{}
	backlog := lh.backlog(w.last, resume)
	if len(backlog) > 0 {
		w.last = backlog[len(backlog)-1].id
	}
	return backlog
}

// backlog is what a new watcher that has seen the events up to last
// (resume) is sent first: the kept events after last; nothing when last
// is the newest event; otherwise the state now, if known: for a watcher
// that resumes from before the kept events, or from beyond the newest (ids
// restarted with the store), a gap. The caller holds lh.mu.
func (lh *leaseHub) backlog(last eventID, resume bool) []leaseEvent {
	if n := len(lh.events); resume && n > 0 {
		newest := lh.events[n-1].id
		switch {
		case newest == last:
			return nil
		case !lh.events[0].id.after(last) && newest.after(last):
			var evs []leaseEvent
			for _, ev := range lh.events {
				if ev.id.after(last) {
					evs = append(evs, ev)
				}
			}
			return evs
		}
	}
	if lh.state != nil {
		return []leaseEvent{*lh.state}
	}
	return nil
}

// remove unregisters w and returns how many watchers are left.
func (lh *leaseHub) remove(w *watcher) int {
	lh.mu.Lock()
	defer lh.mu.Unlock()
	delete(lh.subs, w)
	return len(lh.subs)
}

// stop ends the hub's goroutine (without waiting for it).
func (lh *leaseHub) stop() { lh.cancel() }

// publish keeps evs and hands them to every watcher that has not seen
// them; a watcher whose buffer is full is dropped.
func (lh *leaseHub) publish(evs []leaseEvent) {
	if len(evs) == 0 {
		return
	}
	for i := range evs {
		evs[i].encoded = appendEvent(nil, evs[i])
	}
	lh.mu.Lock()
	defer lh.mu.Unlock()
	for _, ev := range evs {
		lh.events = append(lh.events, ev)
		if ev.Event != EventLockDelay {
			lh.state = &ev
		}
	}
	if n := len(lh.events) - keptEvents; n > 0 {
		lh.events = slices.Delete(lh.events, 0, n)
	}
	for w := range lh.subs {
		lh.deliver(w, evs)
	}
}

// deliver sends w the events of evs it has not seen (those after its last,
// and gap events other than its last), or drops it. The caller holds
// lh.mu.
func (lh *leaseHub) deliver(w *watcher, evs []leaseEvent) {
	for _, ev := range evs {
		if ev.id == w.last || !ev.id.after(w.last) && !ev.gap {
			continue
		}
		select {
		case w.ch <- ev:
			w.last = ev.id
		default:
			delete(lh.subs, w)
			close(w.dropped)
			return
		}
	}
}

// run follows the store until ctx ends: a watch from after, and again
// from the last change seen whenever it breaks.
func (lh *leaseHub) run(ctx context.Context, after int64) {
	defer close(lh.done)
	for ctx.Err() == nil {
		if ch, err := lh.hub.store.WatchLease(ctx, lh.name, after); err == nil {
			after = lh.follow(ctx, ch, after)
		}
		select {
		case <-ctx.Done():
		case <-time.After(retryWatch):
		}
	}
}

// follow applies the changes on ch, and checks for a lapse when the
// current grant's expiry passes, until ch closes or ctx ends; it returns
// the Seq of the last change applied. A grant or renewal that comes first
// is checked at once, before it is published: replayed from the past, or
// the state when the watch began, it may have lapsed since, and its expiry
// may be only an estimate made now.
func (lh *leaseHub) follow(ctx context.Context, ch <-chan tokens.LeaseChange, after int64) int64 {
	expiry := time.NewTimer(time.Hour)
	defer expiry.Stop()
	first := true
	for {
		expiry.Stop()
		if lh.seq != 0 && lh.cur.Held && !lh.lapsed {
			expiry.Reset(time.Until(lh.cur.ExpiresAt) + expirySlack)
		}
		select {
		case <-ctx.Done():
			return after
		case c, ok := <-ch:
			if !ok {
				return after
			}
			evs := lh.apply(c)
			if first && lh.cur.Held {
				evs = append(evs, lh.checkLapse(ctx)...)
			}
			lh.publish(evs)
			after = c.Seq
			first = false
		case <-expiry.C:
			lh.publish(lh.checkLapse(ctx))
		}
	}
}
