package storetest

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// RunLeases runs the lease contract suite: the seed's lease semantics, fence
// on grant, the refusal of epochs never issued, exhausted epochs, the
// binding of each grant to the caller that acquired it, and exclusive
// epochs (fence on expiry and release, lock-delay). The cases written
// before owners existed run with the anonymous caller throughout, so they
// also show that without owners nothing changed.
func RunLeases(t *testing.T, fresh func(t *testing.T) Factory) {
	runCases(t, fresh, append([]contractCase{
		{"AcquireFree", testAcquireFree},
		{"AcquireHeldByAnother", testAcquireHeld},
		{"AcquireAgainRaisesEpoch", testAcquireAgain},
		{"Renew", testRenew},
		{"ExpiryAndTakeover", testExpiryAndTakeover},
		{"Release", testRelease},
		{"GetLease", testGetLease},
		{"GrantAboveHWM", testGrantAboveHWM},
		{"EpochNotIssued", testEpochNotIssued},
		{"InvalidRequests", testInvalidLeaseRequests},
		{"ConcurrentAcquire", testConcurrentAcquire},
		{"LeaseSurvivesRestart", testLeaseSurvivesRestart},
		{"LeaseSharedBetweenClients", testLeaseShared},
		{"EpochExhausted", testEpochExhausted},
		{"OwnerRecorded", testOwnerRecorded},
		{"RenewByAnotherOwner", testRenewOwned},
		{"ReleaseByAnotherOwner", testReleaseOwned},
		{"AcquireByAnotherOwner", testAcquireOwned},
		{"TakeoverAfterExpiryByAnotherOwner", testOwnedTakeover},
		{"UnownedLeases", testUnownedLeases},
		{"OwnerSurvivesRestartAndReplicas", testOwnerDurable},
		{"InvalidCaller", testInvalidCaller},
	}, append(lifeCases, watchCases...)...))
}

// anon is the anonymous caller: no name, no admin rights. Its grants are
// unowned.
var anon = tokens.Caller{}

func mustAcquire(t *testing.T, s tokens.Store, name, holder string, ttl time.Duration) tokens.Grant {
	t.Helper()
	return mustAcquireBy(t, s, name, holder, ttl, anon)
}

// mustAcquireBy acquires for by and checks the grant, by's name as owner
// included.
func mustAcquireBy(t *testing.T, s tokens.Store, name, holder string, ttl time.Duration, by tokens.Caller) tokens.Grant {
	t.Helper()
	g, err := s.Acquire(ctx(t), name, holder, tokens.Terms{TTL: ttl}, by)
	if err != nil {
		t.Fatalf("Acquire(%q, %q) by %+v: %v", name, holder, by, err)
	}
	if g.Name != name || g.Holder != holder || !g.Held || g.Epoch <= 0 || g.TTL != ttl || g.Owner != by.Name {
		t.Fatalf("Acquire(%q, %q) by %+v = %+v", name, holder, by, g.Lease)
	}
	return g
}

// MustBeHeld fails t unless err is a *tokens.LeaseHeldError naming holder,
// epoch and the live lease's deadline.
func MustBeHeld(t testing.TB, err error, holder string, epoch int64) {
	t.Helper()
	var held *tokens.LeaseHeldError
	if !errors.As(err, &held) || held.Holder != holder || held.Epoch != epoch || held.ExpiresAt.IsZero() {
		t.Fatalf("got %v, want *LeaseHeldError by %q at epoch %d", err, holder, epoch)
	}
}

// MustBeLost fails t unless err is a *tokens.LeaseLostError.
func MustBeLost(t testing.TB, err error) {
	t.Helper()
	var lost *tokens.LeaseLostError
	if !errors.As(err, &lost) {
		t.Fatalf("got %v, want *LeaseLostError", err)
	}
}

// acquireWhenExpired retries an acquire until the previous lease lapses on
// the store's clock (bounded, not timed).
func acquireWhenExpired(t *testing.T, s tokens.Store, name, holder string, ttl time.Duration) tokens.Grant {
	t.Helper()
	return acquireWhenExpiredBy(t, s, name, holder, ttl, anon)
}

// acquireWhenExpiredBy is acquireWhenExpired for caller by, also retrying
// while the live lease is another owner's.
func acquireWhenExpiredBy(t *testing.T, s tokens.Store, name, holder string, ttl time.Duration, by tokens.Caller) tokens.Grant {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		g, err := s.Acquire(ctx(t), name, holder, tokens.Terms{TTL: ttl}, by)
		if err == nil {
			return g
		}
		var (
			held  *tokens.LeaseHeldError
			owned *tokens.LeaseOwnedError
		)
		if !(errors.As(err, &held) || errors.As(err, &owned)) || time.Now().After(deadline) {
			t.Fatalf("Acquire(%q, %q) after expiry: %v", name, holder, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func testAcquireFree(t *testing.T, f Factory) {
	s := f(t)
	g := mustAcquire(t, s, "lease", "node-a", 15*time.Second)
	if g.Epoch != 1 || g.Previous != nil {
		t.Fatalf("first grant = %+v (previous %+v), want epoch 1 and no previous", g.Lease, g.Previous)
	}
	if !g.ExpiresAt.After(time.Now().Add(5 * time.Second)) {
		t.Fatalf("ExpiresAt = %v, want about 15s ahead", g.ExpiresAt)
	}
	mustCurrent(t, s, "lease", 1)
}

func testAcquireHeld(t *testing.T, f Factory) {
	s := f(t)
	mustAcquire(t, s, "lease", "node-a", 15*time.Second)
	_, err := s.Acquire(ctx(t), "lease", "node-b", tokens.Terms{TTL: 15 * time.Second}, anon)
	MustBeHeld(t, err, "node-a", 1)
	mustCurrent(t, s, "lease", 1)
}

func testAcquireAgain(t *testing.T, f Factory) {
	s := f(t)
	mustAcquire(t, s, "lease", "node-a", 15*time.Second)
	g := mustAcquire(t, s, "lease", "node-a", 15*time.Second)
	if g.Epoch != 2 || g.Previous == nil || g.Previous.Holder != "node-a" || g.Previous.Epoch != 1 {
		t.Fatalf("re-acquire = %+v previous %+v, want epoch 2 after node-a's 1", g.Lease, g.Previous)
	}
	mustCurrent(t, s, "lease", 2)
	mustBeStale(t, s, "lease", 1, 2)
}

func testRenew(t *testing.T, f Factory) {
	s := f(t)
	g := mustAcquire(t, s, "lease", "node-a", 15*time.Second)
	for i := 0; i < 2; i++ { // a retried renew is as safe as one
		l, err := s.Renew(ctx(t), "lease", "node-a", g.Epoch, anon)
		if err != nil {
			t.Fatalf("Renew %d: %v", i, err)
		}
		if l.Epoch != g.Epoch || l.Holder != "node-a" || !l.Held || l.ExpiresAt.Before(g.ExpiresAt.Add(-time.Second)) {
			t.Fatalf("Renew %d = %+v after grant %+v", i, l, g.Lease)
		}
	}
	_, err := s.Renew(ctx(t), "lease", "node-b", g.Epoch, anon)
	MustBeLost(t, err)
	_, err = s.Renew(ctx(t), "lease", "node-a", g.Epoch+1, anon)
	MustBeLost(t, err)
	_, err = s.Renew(ctx(t), "never", "node-a", 1, anon)
	MustBeLost(t, err)
	mustCurrent(t, s, "lease", g.Epoch)
}

// testExpiryAndTakeover is the seed's timeline: node-a's lease lapses,
// node-b takes over with a higher epoch, and node-a's epoch is fenced before
// node-b has written anything.
func testExpiryAndTakeover(t *testing.T, f Factory) {
	s := f(t)
	a := mustAcquire(t, s, "sweeper", "node-a", shortTTL(s))
	b := acquireWhenExpired(t, s, "sweeper", "node-b", 15*time.Second)
	if b.Epoch != a.Epoch+1 || b.Previous == nil || b.Previous.Holder != "node-a" || b.Previous.Epoch != a.Epoch {
		t.Fatalf("takeover = %+v previous %+v", b.Lease, b.Previous)
	}
	mustCurrent(t, s, "sweeper", b.Epoch)
	mustBeStale(t, s, "sweeper", a.Epoch, b.Epoch)
	_, err := s.Renew(ctx(t), "sweeper", "node-a", a.Epoch, anon)
	MustBeLost(t, err)
	_, err = s.Acquire(ctx(t), "sweeper", "node-a", tokens.Terms{TTL: shortTTL(s)}, anon)
	MustBeHeld(t, err, "node-b", b.Epoch)
}

func testRelease(t *testing.T, f Factory) {
	s := f(t)
	a := mustAcquire(t, s, "lease", "node-a", 15*time.Second)
	for i := 0; i < 2; i++ { // a retried release is as safe as one
		if err := s.Release(ctx(t), "lease", "node-a", a.Epoch, anon); err != nil {
			t.Fatalf("Release %d: %v", i, err)
		}
	}
	l, err := s.Lease(ctx(t), "lease")
	if err != nil || l.Held || l.Epoch != a.Epoch {
		t.Fatalf("after release: %+v, %v", l, err)
	}
	_, err = s.Renew(ctx(t), "lease", "node-a", a.Epoch, anon)
	MustBeLost(t, err)
	b := mustAcquire(t, s, "lease", "node-b", 15*time.Second)
	if b.Epoch != a.Epoch+1 {
		t.Fatalf("acquire after release: epoch %d, want %d", b.Epoch, a.Epoch+1)
	}
	MustBeLost(t, s.Release(ctx(t), "lease", "node-a", a.Epoch, anon))
	MustBeLost(t, s.Release(ctx(t), "lease", "node-b", b.Epoch+1, anon))
	MustBeLost(t, s.Release(ctx(t), "never", "node-b", 1, anon))
	mustCurrent(t, s, "lease", b.Epoch)
}

func testGetLease(t *testing.T, f Factory) {
	s := f(t)
	if _, err := s.Lease(ctx(t), "nothing"); !errors.Is(err, tokens.ErrLeaseNotFound) {
		t.Fatalf("Lease(unknown) = %v, want ErrLeaseNotFound", err)
	}
	g := mustAcquire(t, s, "lease", "node-a", 15*time.Second)
	l, err := s.Lease(ctx(t), "lease")
	if err != nil {
		t.Fatal(err)
	}
	if l.Name != "lease" || l.Holder != "node-a" || l.Epoch != g.Epoch || !l.Held || l.TTL != 15*time.Second {
		t.Fatalf("Lease = %+v", l)
	}
	if d := l.ExpiresAt.Sub(g.ExpiresAt); d > 2*time.Second || d < -2*time.Second {
		t.Fatalf("Lease.ExpiresAt %v far from the grant's %v", l.ExpiresAt, g.ExpiresAt)
	}
}

func testGrantAboveHWM(t *testing.T, f Factory) {
	s := f(t)
	mustAdvance(t, s, "raw-first", 10)
	g := mustAcquire(t, s, "raw-first", "node-a", 15*time.Second)
	if g.Epoch != 11 {
		t.Fatalf("grant over HWM 10 = epoch %d, want 11", g.Epoch)
	}
	mustCurrent(t, s, "raw-first", 11)
	mustBeStale(t, s, "raw-first", 10, 11)
}

func testEpochNotIssued(t *testing.T, f Factory) {
	s := f(t)
	g := mustAcquire(t, s, "issued", "node-a", 15*time.Second)
	for _, e := range []int64{g.Epoch + 1, g.Epoch + 100, 1<<63 - 1} {
		_, err := s.Advance(ctx(t), "issued", e)
		var notIssued *tokens.EpochNotIssuedError
		if !errors.As(err, &notIssued) || notIssued.Issued != g.Epoch || notIssued.Presented != e {
			t.Fatalf("Advance(%d) over issued %d = %v, want *EpochNotIssuedError", e, g.Epoch, err)
		}
	}
	mustCurrent(t, s, "issued", g.Epoch)
	mustAdvance(t, s, "issued", g.Epoch)
	// A resource no lease ever named takes any epoch.
	mustAdvance(t, s, "no-lease", 1<<62)
}

func testInvalidLeaseRequests(t *testing.T, f Factory) {
	s := f(t)
	for _, c := range []struct {
		name, holder string
		ttl          time.Duration
	}{
		{"l", "", time.Second},
		{"l", "a\nb", time.Second},
		{"l", "a", 0},
		{"l", "a", -time.Second},
		{"l", "a", 500 * time.Millisecond},
		{"l", "a", tokens.MaxLeaseTTL + time.Second},
	} {
		if _, err := s.Acquire(ctx(t), c.name, c.holder, tokens.Terms{TTL: c.ttl}, anon); !errors.Is(err, tokens.ErrInvalidLease) {
			t.Fatalf("Acquire(%q, %q, %s) = %v, want ErrInvalidLease", c.name, c.holder, c.ttl, err)
		}
	}
	if _, err := s.Acquire(ctx(t), "", "a", tokens.Terms{TTL: shortTTL(s)}, anon); !errors.Is(err, tokens.ErrInvalidResource) {
		t.Fatalf("Acquire with empty name = %v", err)
	}
	if _, err := s.Renew(ctx(t), "l", "a", 0, anon); !errors.Is(err, tokens.ErrInvalidLease) {
		t.Fatalf("Renew epoch 0 = %v", err)
	}
	if err := s.Release(ctx(t), "l", "", 1, anon); !errors.Is(err, tokens.ErrInvalidLease) {
		t.Fatalf("Release empty holder = %v", err)
	}
	if _, err := s.Lease(ctx(t), "l"); !errors.Is(err, tokens.ErrLeaseNotFound) {
		t.Fatalf("refused requests created the lease: %v", err)
	}
}

func testConcurrentAcquire(t *testing.T, f Factory) {
	s := f(t)
	const n = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	var winners []tokens.Grant
	errc := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			g, err := s.Acquire(ctx(t), "race", fmt.Sprintf("node-%d", i), tokens.Terms{TTL: 15 * time.Second}, anon)
			var held *tokens.LeaseHeldError
			switch {
			case err == nil:
				mu.Lock()
				winners = append(winners, g)
				mu.Unlock()
			case !errors.As(err, &held):
				errc <- err
			}
		}(i)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatalf("Acquire: %v", err)
	}
	if len(winners) != 1 || winners[0].Epoch != 1 {
		t.Fatalf("winners = %+v, want exactly one at epoch 1", winners)
	}
}

func testLeaseSurvivesRestart(t *testing.T, f Factory) {
	s := f(t)
	g := mustAcquire(t, s, "durable-lease", "node-a", 30*time.Second)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := f(t)
	l, err := s2.Lease(ctx(t), "durable-lease")
	if err != nil || l.Epoch != g.Epoch || l.Holder != "node-a" || !l.Held {
		t.Fatalf("after restart: %+v, %v", l, err)
	}
	_, err = s2.Acquire(ctx(t), "durable-lease", "node-b", tokens.Terms{TTL: shortTTL(s2)}, anon)
	MustBeHeld(t, err, "node-a", g.Epoch)
	if _, err := s2.Renew(ctx(t), "durable-lease", "node-a", g.Epoch, anon); err != nil {
		t.Fatalf("renew after restart: %v", err)
	}
	mustCurrent(t, s2, "durable-lease", g.Epoch)
}

func testLeaseShared(t *testing.T, f Factory) {
	s1, s2, ok := twoClients(t, f)
	if !ok {
		return
	}
	g := mustAcquire(t, s1, "shared-lease", "node-a", 15*time.Second)
	_, err := s2.Acquire(ctx(t), "shared-lease", "node-b", tokens.Terms{TTL: 15 * time.Second}, anon)
	MustBeHeld(t, err, "node-a", g.Epoch)
	if _, err := s2.Renew(ctx(t), "shared-lease", "node-a", g.Epoch, anon); err != nil {
		t.Fatalf("renew through another client: %v", err)
	}
	if _, err := s2.Advance(ctx(t), "shared-lease", g.Epoch+1); !errors.As(err, new(*tokens.EpochNotIssuedError)) {
		t.Fatalf("Advance above the grant through another client = %v, want *EpochNotIssuedError", err)
	}
	l, err := s2.Lease(ctx(t), "shared-lease")
	if err != nil || l.Holder != "node-a" || l.Epoch != g.Epoch {
		t.Fatalf("Lease through another client = %+v, %v", l, err)
	}
}

// testEpochExhausted: a raw write at 2^63-1 on a resource never leased is
// admitted, and every later acquire of the name is refused with a verdict,
// not an outage, changing nothing; as is re-acquiring a lease granted at
// 2^63-1.
func testEpochExhausted(t *testing.T, f Factory) {
	s := f(t)
	mustExhausted := func(t *testing.T, err error, name string) {
		t.Helper()
		var exhausted *tokens.EpochExhaustedError
		if !errors.As(err, &exhausted) || exhausted.Name != name || exhausted.Epoch != math.MaxInt64 {
			t.Fatalf("Acquire(%q) at the top = %v, want *EpochExhaustedError{%q, 2^63-1}", name, err, name)
		}
		if errors.As(err, new(*tokens.UnavailableError)) {
			t.Fatalf("Acquire(%q) at the top = %v: a verdict, not an *UnavailableError", name, err)
		}
	}
	mustAdvance(t, s, "top", math.MaxInt64)
	for _, by := range []tokens.Caller{anon, {Name: "k1"}, {Name: "ops", Admin: true}} {
		_, err := s.Acquire(ctx(t), "top", "node-a", tokens.Terms{TTL: 15 * time.Second}, by)
		mustExhausted(t, err, "top")
	}
	if _, err := s.Lease(ctx(t), "top"); !errors.Is(err, tokens.ErrLeaseNotFound) {
		t.Fatalf("refused grants left a lease: %v", err)
	}
	mustCurrent(t, s, "top", math.MaxInt64)
	mustAdvance(t, s, "top", math.MaxInt64) // raw writes at the top still pass

	// A lease granted the highest epoch can be renewed and released, never
	// granted again.
	mustAdvance(t, s, "near", math.MaxInt64-1)
	g := mustAcquire(t, s, "near", "node-a", 15*time.Second)
	if g.Epoch != math.MaxInt64 {
		t.Fatalf("grant over HWM 2^63-2 = epoch %d", g.Epoch)
	}
	_, err := s.Acquire(ctx(t), "near", "node-a", tokens.Terms{TTL: 15 * time.Second}, anon)
	mustExhausted(t, err, "near")
	if _, err := s.Renew(ctx(t), "near", "node-a", g.Epoch, anon); err != nil {
		t.Fatalf("renew at 2^63-1: %v", err)
	}
	if err := s.Release(ctx(t), "near", "node-a", g.Epoch, anon); err != nil {
		t.Fatalf("release at 2^63-1: %v", err)
	}
	_, err = s.Acquire(ctx(t), "near", "node-b", tokens.Terms{TTL: 15 * time.Second}, anon)
	mustExhausted(t, err, "near")
	l, err := s.Lease(ctx(t), "near")
	if err != nil || l.Epoch != math.MaxInt64 || l.Holder != "node-a" || l.Held {
		t.Fatalf("lease after refused grants = %+v, %v", l, err)
	}
	mustCurrent(t, s, "near", math.MaxInt64)
}

// shortTTL is the shortest lease TTL s grants (tokens.LeaseTTLRange): a
// second on most stores, etcd's minimum on etcd.
func shortTTL(s tokens.Store) time.Duration {
	lo, _ := tokens.LeaseTTLRange(s)
	return lo
}
