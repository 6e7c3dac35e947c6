package control

import (
	"context"
	"time"

	"github.com/fencegw/fencegw/wire"

	"github.com/fencegw/fencegw/tokens"
)

// lapseReadTimeout bounds the read a leaseHub makes when a grant's expiry
// passes.
const lapseReadTimeout = 5 * time.Second

// apply turns one store change into the events it means, given the lease
// as the change before left it, and keeps c as the current state. The
// first change the hub sees (or one after a Gap) says only what state the
// lease is in; it is a gap event (see leaseEvent.gap) when the store says
// Gap or the hub did not resume from a watcher's id.
func (lh *leaseHub) apply(c tokens.LeaseChange) []leaseEvent {
	first := lh.seq == 0 || c.Gap
	gap := c.Gap || lh.seq == 0 && !lh.resumed
	evs := lh.applyChange(c, first)
	for i := range evs {
		evs[i].gap = gap
	}
	return evs
}

// applyChange is apply without gap marks; first is set for a change that
// says only the lease's state.
func (lh *leaseHub) applyChange(c tokens.LeaseChange, first bool) []leaseEvent {
	prev, prevSeq, prevLapsed := lh.cur, lh.seq, lh.lapsed
	lh.cur, lh.seq, lh.lapsed = c.Lease, c.Seq, false
	id := eventID{seq: c.Seq}
	l := c.Lease
	if first {
		switch {
		case l.Held:
			return []leaseEvent{event(EventAcquired, l, id)}
		case l.Released:
			return []leaseEvent{event(EventReleased, l, id)}
		}
		lh.lapsed = true
		return []leaseEvent{event(EventExpired, l, eventID{seq: c.Seq, step: stepExpired})}
	}
	switch {
	case l.Epoch != prev.Epoch:
		var evs []leaseEvent
		if prev.Held && !prevLapsed && !prev.Released {
			// The grant ended unseen before this one: superseded by its
			// own holder while live, or lapsed before the expiry read.
			kind := EventReleased
			if !prev.ExpiresAt.After(time.Now()) {
				kind = EventExpired
			}
			evs = append(evs, event(kind, prev, eventID{seq: prevSeq, step: stepExpired}))
		}
		return append(evs, event(EventAcquired, l, id))
	case l.Released && !prev.Released:
		return []leaseEvent{event(EventReleased, l, id)}
	case l.Held && !prev.Released:
		return []leaseEvent{event(EventRenewed, l, id)}
	}
	// A change that ended nothing live (a retried release after a lapse):
	// the lapse, unless it was reported.
	lh.lapsed = true
	if prev.Held && !prevLapsed && !prev.Released {
		return lapseEvents(l, prevSeq)
	}
	return nil
}

// checkLapse reads the lease once its current grant's expiry passed: the
// lapse (expired and, with a lock-delay, lock_delay) when the grant is no
// longer held and was not released. A grant still held (an early estimate
// of its expiry) is checked again at the expiry read; a change under way
// and a failed read are checked again after retryWatch.
func (lh *leaseHub) checkLapse(ctx context.Context) []leaseEvent {
	rctx, cancel := context.WithTimeout(ctx, lapseReadTimeout)
	defer cancel()
	l, err := lh.hub.read(rctx, lh.name)
	now := time.Now()
	switch {
	case err != nil || l.Epoch != lh.cur.Epoch || l.Released:
		lh.cur.ExpiresAt = now.Add(retryWatch - expirySlack) // the change comes, or read again
		return nil
	case l.Held:
		lh.cur.ExpiresAt = later(l.ExpiresAt, now)
		return nil
	}
	lh.lapsed = true
	return lapseEvents(l, lh.seq)
}

// lapseEvents are the events of the lapse of grant l, which the change
// seq left live: expired and, with a lock-delay, lock_delay.
func lapseEvents(l tokens.Lease, seq int64) []leaseEvent {
	evs := []leaseEvent{event(EventExpired, l, eventID{seq: seq, step: stepExpired})}
	if l.LockDelay > 0 {
		until := l.ExpiresAt.Add(l.LockDelay).UTC()
		ld := event(EventLockDelay, l, eventID{seq: seq, step: stepLockDelay})
		ld.LockDelayUntil = &until
		evs = append(evs, ld)
	}
	return evs
}

// later is t, or a little after now when t is not after it (an expiry
// estimated in whole seconds), so that a check is never repeated at once.
func later(t, now time.Time) time.Time {
	if t.After(now) {
		return t
	}
	return now.Add(100 * time.Millisecond)
}

// event is the event kind of lease l, with id.
func event(kind string, l tokens.Lease, id eventID) leaseEvent {
	return leaseEvent{LeaseEvent: wire.LeaseEvent{Event: kind, Name: l.Name, Holder: l.Holder, Epoch: wire.Epoch(l.Epoch),
		ExpiresAt: l.ExpiresAt.UTC(), At: time.Now().UTC()}, id: id}
}
