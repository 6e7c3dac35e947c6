package storetest

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// RunLeaseRecords runs the cases of counting live leases and reclaiming
// the records of ended ones. fresh is as for Run.
func RunLeaseRecords(t *testing.T, fresh func(t *testing.T) Factory) {
	runCases(t, fresh, []contractCase{
		{"LiveLeases", testLiveLeases},
		{"ReclaimReleased", testReclaimReleased},
		{"ReclaimKeepsLockDelay", testReclaimKeepsLockDelay},
		{"ReclaimRetention", testReclaimRetention},
		{"ReclaimBatch", testReclaimBatch},
	})
}

// testLiveLeases: held leases and leases in their lock-delay count, per
// owner; released and lapsed ones (out of any lock-delay) do not.
func testLiveLeases(t *testing.T, f Factory) {
	s := f(t)
	k1, k2 := tokens.Caller{Name: "k1"}, tokens.Caller{Name: "k2"}
	mustAcquireBy(t, s, "held-1", "a", time.Minute, k1)
	mustAcquireBy(t, s, "held-2", "a", time.Minute, k1)
	mustAcquireBy(t, s, "held-3", "a", time.Minute, k2)
	if _, err := s.Acquire(ctx(t), "delayed", "a", tokens.Terms{TTL: shortTTL(s), LockDelay: time.Minute}, anon); err != nil {
		t.Fatal(err)
	}
	r := mustAcquireBy(t, s, "released", "a", time.Minute, k2)
	if err := s.Release(ctx(t), "released", "a", r.Epoch, k2); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, s, "lapsed", "a", shortTTL(s))
	markWhenLapsed(t, s, "delayed")
	markWhenLapsed(t, s, "lapsed")
	want := tokens.LiveCount{Total: 4, ByOwner: map[string]int{"k1": 2, "k2": 1, "": 1}}
	if got := mustCount(t, s); got.Total != want.Total || !maps.Equal(nonZero(got.ByOwner), want.ByOwner) {
		t.Fatalf("LiveLeases = %+v, want %+v", got, want)
	}
	// A restarted client counts the same.
	s.Close()
	if got := mustCount(t, f(t)); got.Total != want.Total {
		t.Fatalf("LiveLeases after a restart = %+v, want %+v", got, want)
	}
}

// testReclaimReleased: a released lease's record is reclaimed; its HWM and
// issued epoch are not: the next grant's epoch is above the old one, a
// write at the old epoch is refused as lapsed, one above it as not issued,
// and the old grant's renew and release are lost. Live leases stay.
func testReclaimReleased(t *testing.T, f Factory) {
	s := f(t)
	mustAcquire(t, s, "gone", "a", time.Minute)
	g := mustAcquire(t, s, "gone", "a", time.Minute) // epoch 2
	if err := s.Release(ctx(t), "gone", "a", g.Epoch, anon); err != nil {
		t.Fatal(err)
	}
	live := mustAcquire(t, s, "live", "a", time.Minute)
	if n := mustReclaim(t, s, 0, 100); n != 1 {
		t.Fatalf("ReclaimLeases reclaimed %d, want 1 (the released lease)", n)
	}
	if _, err := s.Lease(ctx(t), "gone"); !errors.Is(err, tokens.ErrLeaseNotFound) {
		t.Fatalf("Lease of a reclaimed lease = %v, want ErrLeaseNotFound", err)
	}
	if l, err := s.Lease(ctx(t), "live"); err != nil || !l.Held || l.Epoch != live.Epoch {
		t.Fatalf("Lease of the live lease after a reclaim = %+v, %v", l, err)
	}
	if m := mustMark(t, s, "gone"); m.HWM != g.Epoch || m.Lease.Epoch != g.Epoch || m.Lease.Left != 0 {
		t.Fatalf("Mark of a reclaimed lease = %+v, want HWM and lease epoch %d with no life", m, g.Epoch)
	}
	mustBeLapsed(t, s, "gone", g.Epoch, "")
	if _, err := s.Advance(ctx(t), "gone", g.Epoch+1); !isA[*tokens.EpochNotIssuedError](err) {
		t.Fatalf("Advance above the issued epoch after a reclaim = %v, want *EpochNotIssuedError", err)
	}
	MustBeLost(t, s.Release(ctx(t), "gone", "a", g.Epoch, anon))
	_, err := s.Renew(ctx(t), "gone", "a", g.Epoch, anon)
	MustBeLost(t, err)
	next := mustAcquire(t, s, "gone", "b", time.Minute)
	if next.Epoch <= g.Epoch {
		t.Fatalf("grant after a reclaim at epoch %d, want above %d", next.Epoch, g.Epoch)
	}
}

// testReclaimKeepsLockDelay: a lease in its lock-delay is never reclaimed,
// and once the delay is over it is.
func testReclaimKeepsLockDelay(t *testing.T, f Factory) {
	s := f(t)
	g, err := s.Acquire(ctx(t), "delayed", "a", tokens.Terms{TTL: shortTTL(s), LockDelay: 3 * time.Second}, anon)
	if err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, s, "held", "a", time.Minute)
	markWhenLapsed(t, s, "delayed")
	if n := mustReclaim(t, s, 0, 100); n != 0 {
		t.Fatalf("ReclaimLeases during a lock-delay reclaimed %d, want 0", n)
	}
	mustBeDelayed(t, s, "delayed", g)
	b := acquireAfterDelay(t, s, "delayed", "b")
	if err := s.Release(ctx(t), "delayed", "b", b.Epoch, anon); err != nil {
		t.Fatal(err)
	}
	if n := mustReclaim(t, s, 0, 100); n != 1 {
		t.Fatalf("ReclaimLeases after the lock-delay and a release reclaimed %d, want 1", n)
	}
	if _, err := s.Lease(ctx(t), "held"); err != nil {
		t.Fatalf("the held lease after a reclaim: %v", err)
	}
}

// testReclaimRetention: a lease that ended less than retention ago stays.
func testReclaimRetention(t *testing.T, f Factory) {
	s := f(t)
	g := mustAcquire(t, s, "recent", "a", time.Minute)
	if err := s.Release(ctx(t), "recent", "a", g.Epoch, anon); err != nil {
		t.Fatal(err)
	}
	if n := mustReclaim(t, s, time.Hour, 100); n != 0 {
		t.Fatalf("ReclaimLeases within the retention reclaimed %d, want 0", n)
	}
	if _, err := s.Lease(ctx(t), "recent"); err != nil {
		t.Fatalf("the lease ended within the retention: %v", err)
	}
}

// testReclaimBatch: one call reclaims at most limit records.
func testReclaimBatch(t *testing.T, f Factory) {
	s := f(t)
	for _, n := range []string{"r1", "r2", "r3"} {
		g := mustAcquire(t, s, n, "a", time.Minute)
		if err := s.Release(ctx(t), n, "a", g.Epoch, anon); err != nil {
			t.Fatal(err)
		}
	}
	if n := mustReclaim(t, s, 0, 2); n != 2 {
		t.Fatalf("ReclaimLeases(limit 2) reclaimed %d", n)
	}
	if n := mustReclaim(t, s, 0, 2); n != 1 {
		t.Fatalf("the second ReclaimLeases reclaimed %d, want 1", n)
	}
}

func mustCount(t *testing.T, s tokens.Store) tokens.LiveCount {
	t.Helper()
	c, err := s.LiveLeases(ctx(t))
	if err != nil {
		t.Fatalf("LiveLeases: %v", err)
	}
	return c
}

func mustReclaim(t *testing.T, s tokens.Store, retention time.Duration, limit int) int {
	t.Helper()
	n, err := s.ReclaimLeases(ctx(t), retention, limit)
	if err != nil {
		t.Fatalf("ReclaimLeases: %v", err)
	}
	return n
}

func nonZero(m map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

func isA[E error](err error) bool {
	var e E
	return errors.As(err, &e)
}
