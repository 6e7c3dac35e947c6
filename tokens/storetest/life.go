package storetest

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// lifeCases are the cases of exclusive epochs: every store reads a
// resource's lease life with its HWM, and fences writes of a lapsed or
// released grant; lock-delay follows an unclean lapse and only that.
var lifeCases = []contractCase{
	{"MarkOfUnleasedResource", testMarkUnleased},
	{"MarkOfLiveGrant", testMarkLive},
	{"LapseIsFenced", testLapseFenced},
	{"ReleaseIsFenced", testReleaseFenced},
	{"LockDelayAfterLapse", testLockDelayAfterLapse},
	{"NoLockDelayAfterRelease", testNoLockDelayAfterRelease},
	{"ReleaseKeepsLockDelay", testReleaseKeepsLockDelay},
	{"ReleaseAtExpiryKeepsLockDelay", testReleaseAtExpiryKeepsLockDelay},
	{"InvalidLockDelay", testInvalidLockDelay},
}

func mustMark(t *testing.T, s tokens.Store, res string) tokens.Mark {
	t.Helper()
	m, err := s.Mark(ctx(t), res)
	if err != nil {
		t.Fatalf("Mark(%q): %v", res, err)
	}
	return m
}

// markWhenLapsed polls the store until the grant of name has no life left
// on its clock and is no longer held (bounded, not timed) and returns that
// Mark. (etcd knows a grant's life to the second, rounded down: its Mark
// may show none left a second before its lease read says it lapsed.)
func markWhenLapsed(t *testing.T, s tokens.Store, name string) tokens.Mark {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		m := mustMark(t, s, name)
		l, err := s.Lease(ctx(t), name)
		if err != nil {
			t.Fatal(err)
		}
		if m.Lease.Left == 0 && !l.Held {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("lease %q still has %s left after 20s (held: %t)", name, m.Lease.Left, l.Held)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mustBeLapsed fails t unless a Fence over s refuses a write at epoch to
// res as stale because the grant at epoch ended as how says.
func mustBeLapsed(t *testing.T, s tokens.Store, res string, epoch int64, how string) {
	t.Helper()
	f := tokens.NewFence(s, tokens.FenceOptions{})
	err := f.Admit(ctx(t), res, epoch)
	var stale *tokens.StaleEpochError
	if !errors.As(err, &stale) || stale.Presented != epoch || !strings.Contains(stale.Reason, how) {
		t.Fatalf("Admit(%q, %d) = %v, want stale: the lease %s", res, epoch, err, how)
	}
}

func testMarkUnleased(t *testing.T, f Factory) {
	s := f(t)
	if m := mustMark(t, s, "raw"); m != (tokens.Mark{}) {
		t.Fatalf("Mark of a resource never written = %+v, want zero", m)
	}
	mustAdvance(t, s, "raw", 5)
	if m := mustMark(t, s, "raw"); m.HWM != 5 || m.Lease.Leased() {
		t.Fatalf("Mark after Advance(5) = %+v, want HWM 5 and no lease", m)
	}
	if err := tokens.NewFence(s, tokens.FenceOptions{}).Admit(ctx(t), "raw", 5); err != nil {
		t.Fatalf("a raw write on a resource never leased: %v", err)
	}
}

func testMarkLive(t *testing.T, f Factory) {
	s, other, ok := twoClients(t, f)
	if !ok {
		other = s // renewed through the same client
	}
	g := mustAcquire(t, s, "live", "node-a", 15*time.Second)
	m := mustMark(t, s, "live")
	// etcd gives whole seconds, rounded down: at least 13s of 15.
	if m.HWM != g.Epoch || m.Lease.Epoch != g.Epoch || m.Lease.Released ||
		m.Lease.Left < 13*time.Second || m.Lease.Left > 15*time.Second {
		t.Fatalf("Mark of a fresh 15s grant at epoch %d = %+v", g.Epoch, m)
	}
	if _, err := other.Renew(ctx(t), "live", "node-a", g.Epoch, anon); err != nil {
		t.Fatal(err)
	}
	if m := mustMark(t, s, "live"); m.Lease.Epoch != g.Epoch || m.Lease.Left < 13*time.Second {
		t.Fatalf("Mark after a renewal through another client = %+v", m)
	}
	f2 := tokens.NewFence(s, tokens.FenceOptions{})
	a, err := f2.Decide(ctx(t), tokens.Presented{Tokens: []string{strconv.FormatInt(g.Epoch, 10)}, Verifier: tokens.RawVerifier{},
		Resource: func() (string, error) { return "live", nil }, RawOnLeased: true})
	if err != nil || a.DeliverBy.IsZero() || time.Until(a.DeliverBy) > 15*time.Second {
		t.Fatalf("Decide at the live grant's epoch = %+v, %v; want admitted with DeliverBy within 15s", a, err)
	}
}

func testLapseFenced(t *testing.T, f Factory) {
	s := f(t)
	g := mustAcquire(t, s, "lapsing", "node-a", 2*time.Second)
	if err := tokens.NewFence(s, tokens.FenceOptions{}).Admit(ctx(t), "lapsing", g.Epoch); err != nil {
		t.Fatalf("a write of the live grant: %v", err)
	}
	m := markWhenLapsed(t, s, "lapsing")
	if m.HWM != g.Epoch || m.Lease.Epoch != g.Epoch || m.Lease.Released {
		t.Fatalf("Mark after the lapse = %+v, want epoch %d, not released", m, g.Epoch)
	}
	// Nobody took over: the write is refused all the same.
	mustBeLapsed(t, s, "lapsing", g.Epoch, "lapsed")
	if _, err := s.Renew(ctx(t), "lapsing", "node-a", g.Epoch, anon); err == nil {
		t.Fatal("a lapsed grant was renewed")
	}
	mustBeLapsed(t, s, "lapsing", g.Epoch, "lapsed")
}

func testReleaseFenced(t *testing.T, f Factory) {
	s := f(t)
	g := mustAcquire(t, s, "released", "node-a", 15*time.Second)
	fence := tokens.NewFence(s, tokens.FenceOptions{})
	if err := fence.Admit(ctx(t), "released", g.Epoch); err != nil {
		t.Fatal(err)
	}
	if err := fence.Release(ctx(t), "released", "node-a", g.Epoch, anon); err != nil {
		t.Fatal(err)
	}
	if m := mustMark(t, s, "released"); m.Lease.Left != 0 || !m.Lease.Released || m.Lease.Epoch != g.Epoch {
		t.Fatalf("Mark after release = %+v, want no life left, released", m)
	}
	// The Fence that released it, and a fresh one.
	err := fence.Admit(ctx(t), "released", g.Epoch)
	if stale := (*tokens.StaleEpochError)(nil); !errors.As(err, &stale) || !strings.Contains(stale.Reason, "released") {
		t.Fatalf("Admit after release through the same Fence = %v", err)
	}
	mustBeLapsed(t, s, "released", g.Epoch, "released")
}

func testLockDelayAfterLapse(t *testing.T, f Factory) {
	s := f(t)
	const delay = 3 * time.Second
	g, err := s.Acquire(ctx(t), "delayed", "node-a", tokens.Terms{TTL: shortTTL(s), LockDelay: delay}, anon)
	if err != nil {
		t.Fatal(err)
	}
	if g.LockDelay != delay {
		t.Fatalf("grant's LockDelay = %s, want %s", g.LockDelay, delay)
	}
	// A renewal keeps the delay with the grant.
	if _, err := s.Renew(ctx(t), "delayed", "node-a", g.Epoch, anon); err != nil {
		t.Fatal(err)
	}
	markWhenLapsed(t, s, "delayed")
	for _, holder := range []string{"node-b", "node-a"} { // nobody, the old holder neither
		_, err = s.Acquire(ctx(t), "delayed", holder, tokens.Terms{TTL: 15 * time.Second}, anon)
		var d *tokens.LockDelayError
		if !errors.As(err, &d) || d.Epoch != g.Epoch || d.Holder != "node-a" || d.Left <= 0 || d.Left > delay+time.Second {
			t.Fatalf("Acquire by %s right after the lapse = %v, want *LockDelayError of at most %s", holder, err, delay+time.Second)
		}
		if !tokens.IsVerdict(err) {
			t.Fatalf("a lock-delay refusal is not a verdict: %v", err)
		}
	}
	mustBeLapsed(t, s, "delayed", g.Epoch, "lapsed")
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := s.Acquire(ctx(t), "delayed", "node-b", tokens.Terms{TTL: 15 * time.Second}, anon)
		if err == nil {
			if b.Epoch != g.Epoch+1 || b.LockDelay != 0 {
				t.Fatalf("grant after the delay = %+v", b.Lease)
			}
			break
		}
		if !errors.As(err, new(*tokens.LockDelayError)) || time.Now().After(deadline) {
			t.Fatalf("Acquire after the lock-delay: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func testNoLockDelayAfterRelease(t *testing.T, f Factory) {
	s := f(t)
	g, err := s.Acquire(ctx(t), "clean", "node-a", tokens.Terms{TTL: 15 * time.Second, LockDelay: time.Hour}, anon)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx(t), "clean", "node-a", g.Epoch, anon); err != nil {
		t.Fatal(err)
	}
	b, err := s.Acquire(ctx(t), "clean", "node-b", tokens.Terms{TTL: 15 * time.Second}, anon)
	if err != nil || b.Epoch != g.Epoch+1 {
		t.Fatalf("Acquire right after a release = %+v, %v; want epoch %d at once", b.Lease, err, g.Epoch+1)
	}
}

func testInvalidLockDelay(t *testing.T, f Factory) {
	s := f(t)
	for _, d := range []time.Duration{-time.Second, tokens.MaxLockDelay + time.Second} {
		_, err := s.Acquire(ctx(t), "l", "node-a", tokens.Terms{TTL: shortTTL(s), LockDelay: d}, anon)
		if !errors.Is(err, tokens.ErrInvalidLease) {
			t.Fatalf("Acquire with lock_delay %s = %v, want ErrInvalidLease", d, err)
		}
	}
}
