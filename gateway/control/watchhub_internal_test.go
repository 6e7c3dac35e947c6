package control

import (
	"testing"

	"github.com/fencegw/fencegw/wire"
)

// TestLeaseHubDropsSlowWatcher: a watcher that falls watcherBuffer events
// behind is dropped at once, and the others still get every event: the
// fan-out never blocks on the slowest watcher.
func TestLeaseHubDropsSlowWatcher(t *testing.T) {
	lh := &leaseHub{name: "slow", subs: make(map[*watcher]struct{})}
	slow := &watcher{ch: make(chan leaseEvent, watcherBuffer), dropped: make(chan struct{})}
	fast := &watcher{ch: make(chan leaseEvent, watcherBuffer), dropped: make(chan struct{})}
	lh.add(slow, false)
	lh.add(fast, false)
	got := 0
	for i := range 3 * watcherBuffer {
		lh.publish([]leaseEvent{{LeaseEvent: wire.LeaseEvent{Event: EventRenewed, Name: "slow"}, id: eventID{seq: int64(i + 1)}}})
		ev := <-fast.ch
		if ev.id.seq != int64(i+1) {
			t.Fatalf("fast watcher got %v, want seq %d", ev.id, i+1)
		}
		got++
	}
	select {
	case <-slow.dropped:
	default:
		t.Fatal("a watcher that read nothing was not dropped")
	}
	if len(lh.subs) != 1 || got != 3*watcherBuffer {
		t.Fatalf("watchers left %d, fast got %d events", len(lh.subs), got)
	}
	if len(lh.events) != keptEvents && len(lh.events) != 3*watcherBuffer {
		t.Fatalf("kept %d events", len(lh.events))
	}
}

// TestLeaseHubBacklog: a watcher resuming from an id the hub keeps gets
// the events after it; one resuming from an id too old, or none, gets the
// event that says the state now.
func TestLeaseHubBacklog(t *testing.T) {
	lh := &leaseHub{name: "b", subs: make(map[*watcher]struct{})}
	for i := int64(1); i <= keptEvents+10; i++ {
		lh.publish([]leaseEvent{{LeaseEvent: wire.LeaseEvent{Event: EventRenewed}, id: eventID{seq: i}}})
	}
	lh.publish([]leaseEvent{{LeaseEvent: wire.LeaseEvent{Event: EventExpired}, id: eventID{seq: keptEvents + 10, step: stepExpired}},
		{LeaseEvent: wire.LeaseEvent{Event: EventLockDelay}, id: eventID{seq: keptEvents + 10, step: stepLockDelay}}})
	w := &watcher{ch: make(chan leaseEvent, 1), dropped: make(chan struct{}), last: eventID{seq: keptEvents}}
	if b := lh.add(w, true); len(b) != 12 || b[0].id.seq != keptEvents+1 || b[11].Event != EventLockDelay {
		t.Fatalf("backlog after %d: %d events from %v", keptEvents, len(b), b[0].id)
	}
	old := &watcher{ch: make(chan leaseEvent, 1), dropped: make(chan struct{}), last: eventID{seq: 3}}
	if b := lh.add(old, true); len(b) != 1 || b[0].Event != EventExpired {
		t.Fatalf("backlog after an id too old = %+v, want the state (expired)", b)
	}
	last := &watcher{ch: make(chan leaseEvent, 1), dropped: make(chan struct{}), last: eventID{seq: keptEvents + 10, step: stepLockDelay}}
	if b := lh.add(last, true); len(b) != 0 {
		t.Fatalf("backlog after the last event = %+v, want none", b)
	}
}
