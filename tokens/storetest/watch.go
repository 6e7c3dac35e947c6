package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// watchCases check LeaseNotifier, LeaseWatcher (every change its own, in
// order, resumable) and the Version and Released a lease read shows.
var watchCases = []contractCase{
	{"NotifiedOfChanges", testNotified},
	{"WatchEveryChange", testWatchEveryChange},
	{"WatchResumes", testWatchResumes},
	{"WatchResumesBeyondLatest", testWatchResumesBeyondLatest},
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

// nextChange returns the next change on ch (bounded).
func nextChange(t *testing.T, ch <-chan tokens.LeaseChange, what string) tokens.LeaseChange {
	t.Helper()
	select {
	case c, ok := <-ch:
		if !ok {
			t.Fatalf("the watch ended before %s", what)
		}
		return c
	case <-time.After(10 * time.Second):
		t.Fatalf("no change for %s", what)
	}
	return tokens.LeaseChange{}
}

// expectChanges checks that ch brings, in order and with rising Seqs, a
// grant of g, a renewal and a release, and returns their Seqs.
func expectChanges(t *testing.T, ch <-chan tokens.LeaseChange, g tokens.Grant, from int) []int64 {
	t.Helper()
	steps := []struct {
		what           string
		held, released bool
	}{{"the grant", true, false}, {"the renewal", true, false}, {"the release", false, true}}
	var seqs []int64
	last := int64(0)
	for _, st := range steps[from:] {
		c := nextChange(t, ch, st.what)
		l := c.Lease
		if l.Epoch != g.Epoch || l.Holder != "node-a" || l.Held != st.held || l.Released != st.released || c.Gap {
			t.Fatalf("change for %s = %+v, want epoch %d held %v released %v", st.what, c, g.Epoch, st.held, st.released)
		}
		if c.Seq <= last {
			t.Fatalf("change for %s has Seq %d, not above the one before (%d)", st.what, c.Seq, last)
		}
		last = c.Seq
		seqs = append(seqs, c.Seq)
	}
	return seqs
}

// watchFromLatest opens a watch on lease from tokens.FromLatest through one
// client of f and lets it settle; other is a second client (the same one
// where the store is exclusive). cancel ends the watch.
func watchFromLatest(t *testing.T, f Factory, lease string) (watcher, other tokens.Store, ch <-chan tokens.LeaseChange, cancel context.CancelFunc) {
	watcher = f(t)
	other = watcher
	if !watcher.Exclusive() {
		other = f(t)
	}
	c, cancel := context.WithCancel(ctx(t))
	ch, err := watcher.WatchLease(c, lease, tokens.FromLatest)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the watch settle
	return watcher, other, ch, cancel
}

// grantRenewRelease makes three changes to lease, back to back: node-a
// acquires it through acquirer (15 s), renews it through renewer and
// releases it through releaser. It returns the grant.
func grantRenewRelease(t *testing.T, acquirer, renewer, releaser tokens.Store, lease string) tokens.Grant {
	t.Helper()
	g := mustAcquire(t, acquirer, lease, "node-a", 15*time.Second)
	if _, err := renewer.Renew(ctx(t), lease, "node-a", g.Epoch, anon); err != nil {
		t.Fatal(err)
	}
	if err := releaser.Release(ctx(t), lease, "node-a", g.Epoch, anon); err != nil {
		t.Fatal(err)
	}
	return g
}

// testWatchEveryChange: a grant, a renewal through another client within
// milliseconds of it, and a release within milliseconds of that are three
// changes, in order, with rising Seqs: none is folded into another.
func testWatchEveryChange(t *testing.T, f Factory) {
	watcher, other, ch, cancel := watchFromLatest(t, f, "every")
	defer cancel()
	g := grantRenewRelease(t, watcher, other, watcher, "every")
	expectChanges(t, ch, g, 0)
	cancel()
}

// testWatchResumes: a watch from the Seq of a change sends what came
// after it, in order with the same Seqs, and nothing before; a watch from
// 0 sends them all; a watch from the last Seq sends nothing; a watch from
// tokens.FromLatest starts with the latest.
func testWatchResumes(t *testing.T, f Factory) {
	watcher, other, ch, cancel := watchFromLatest(t, f, "resumed")
	defer cancel()
	g := grantRenewRelease(t, other, other, other, "resumed")
	seqs := expectChanges(t, ch, g, 0)
	cancel()

	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	resumed, err := watcher.WatchLease(c, "resumed", seqs[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := expectChanges(t, resumed, g, 1); got[0] != seqs[1] || got[1] != seqs[2] {
		t.Fatalf("resumed after %d: Seqs %v, want %v", seqs[0], got, seqs[1:])
	}
	all, err := watcher.WatchLease(c, "resumed", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := expectChanges(t, all, g, 0); got[0] != seqs[0] || got[2] != seqs[2] {
		t.Fatalf("watched from 0: Seqs %v, want %v", got, seqs)
	}
	caughtUp, err := watcher.WatchLease(c, "resumed", seqs[2])
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ch, ok := <-caughtUp:
		if ok {
			t.Fatalf("a watch from the last Seq sent %+v", ch)
		}
	case <-time.After(300 * time.Millisecond):
	}
	latest, err := watcher.WatchLease(c, "resumed", tokens.FromLatest)
	if err != nil {
		t.Fatal(err)
	}
	if l := nextChange(t, latest, "the latest change"); l.Seq != seqs[2] || !l.Lease.Released || l.Lease.Held {
		t.Fatalf("a watch from 0 started with %+v, want the release at Seq %d", l, seqs[2])
	}
}

// testWatchResumesBeyondLatest: a watch resuming from a Seq above any the
// store has for the lease (ids restart with a restored or new store)
// starts with the latest change, Gap set, then sends every later change.
func testWatchResumesBeyondLatest(t *testing.T, f Factory) {
	s := f(t)
	g := mustAcquire(t, s, "beyond", "node-a", 15*time.Second)
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	ch, err := s.WatchLease(c, "beyond", 1<<60)
	if err != nil {
		t.Fatal(err)
	}
	first := nextChange(t, ch, "the state")
	if !first.Gap || !first.Lease.Held || first.Lease.Epoch != g.Epoch {
		t.Fatalf("first change of a watch from beyond the latest = %+v, want the grant, Gap set", first)
	}
	if _, err := s.Renew(ctx(t), "beyond", "node-a", g.Epoch, anon); err != nil {
		t.Fatal(err)
	}
	renewed := nextChange(t, ch, "the renewal")
	if renewed.Gap || !renewed.Lease.Held || renewed.Seq <= first.Seq {
		t.Fatalf("change after the gap = %+v, want the renewal after Seq %d", renewed, first.Seq)
	}
}
