package storetest

import (
	"context"
	"testing"
	"time"
)

// watchCases check LeaseNotifier and the Version and Released a lease
// read shows.
var watchCases = []contractCase{
	{"NotifiedOfChanges", testNotified},
}

// awaitNote waits for a notification on ch (bounded).
func awaitNote(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no notification of %s", what)
	}
}

// drain empties ch of a pending notification.
func drain(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

func testNotified(t *testing.T, f Factory) {
	watcher := f(t)
	writer := watcher
	if !watcher.Exclusive() {
		writer = f(t) // changes through another client
	}
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	ch, err := watcher.SubscribeLease(c, "watched")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the subscription settle; a spurious note is allowed
	drain(ch)
	g := mustAcquire(t, writer, "watched", "node-a", 15*time.Second)
	awaitNote(t, ch, "a grant")
	l1, err := watcher.Lease(ctx(t), "watched")
	if err != nil || !l1.Held || l1.Epoch != g.Epoch || l1.Released {
		t.Fatalf("lease after the grant = %+v, %v", l1, err)
	}
	drain(ch)
	if _, err := writer.Renew(ctx(t), "watched", "node-a", g.Epoch, anon); err != nil {
		t.Fatal(err)
	}
	awaitNote(t, ch, "a renewal")
	l2, err := watcher.Lease(ctx(t), "watched")
	if err != nil || l2.Version == l1.Version || !l2.Held {
		t.Fatalf("lease after a renewal = %+v (before %+v), %v: want another Version", l2, l1, err)
	}
	drain(ch)
	if err := writer.Release(ctx(t), "watched", "node-a", g.Epoch, anon); err != nil {
		t.Fatal(err)
	}
	awaitNote(t, ch, "a release")
	l3, err := watcher.Lease(ctx(t), "watched")
	if err != nil || l3.Held || !l3.Released {
		t.Fatalf("lease after the release = %+v, %v", l3, err)
	}
	cancel()
}
