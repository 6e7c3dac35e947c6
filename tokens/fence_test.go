package tokens_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/boltstore"
)

// observedStore wraps a real store to count calls, to pretend it is shared,
// to hold reads at a gate and to fail on demand.
type observedStore struct {
	tokens.Store
	shared   bool
	currents atomic.Int64
	advances atomic.Int64
	down     atomic.Bool
	gate     chan struct{} // when non-nil, Current and Mark wait for a receive
	// acquireErr, when set, is what Acquire returns after granting: an
	// answer lost after the store may have acted.
	acquireErr error
}

func (s *observedStore) Acquire(ctx context.Context, name, holder string, t tokens.Terms, by tokens.Caller) (tokens.Grant, error) {
	g, err := s.Store.Acquire(ctx, name, holder, t, by)
	if s.acquireErr != nil {
		return tokens.Grant{}, s.acquireErr
	}
	return g, err
}

func (s *observedStore) Exclusive() bool { return !s.shared && s.Store.Exclusive() }

func (s *observedStore) Current(ctx context.Context, r string) (int64, error) {
	s.currents.Add(1)
	if s.gate != nil {
		<-s.gate
	}
	if s.down.Load() {
		return 0, &tokens.UnavailableError{Op: "current", Err: errors.New("down")}
	}
	return s.Store.Current(ctx, r)
}

// Mark counts as a read, as Current does.
func (s *observedStore) Mark(ctx context.Context, r string) (tokens.Mark, error) {
	s.currents.Add(1)
	if s.gate != nil {
		<-s.gate
	}
	if s.down.Load() {
		return tokens.Mark{}, &tokens.UnavailableError{Op: "mark", Err: errors.New("down")}
	}
	return s.Store.Mark(ctx, r)
}

func (s *observedStore) Advance(ctx context.Context, r string, e int64) (int64, error) {
	s.advances.Add(1)
	if s.down.Load() {
		return 0, &tokens.UnavailableError{Op: "advance", Err: errors.New("down")}
	}
	return s.Store.Advance(ctx, r, e)
}

func newObserved(t testing.TB, shared bool) *observedStore {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "fence.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &observedStore{Store: s, shared: shared}
}

// observedFence is a Fence with default options over a new observedStore.
func observedFence(t *testing.T, shared bool) (*tokens.Fence, *observedStore) {
	t.Helper()
	s := newObserved(t, shared)
	return tokens.NewFence(s, tokens.FenceOptions{}), s
}

func admitted(t *testing.T, f *tokens.Fence, r string, e int64) {
	t.Helper()
	if err := f.Admit(context.Background(), r, e); err != nil {
		t.Fatalf("Admit(%q, %d) = %v, want admitted", r, e, err)
	}
}

func refused(t *testing.T, f *tokens.Fence, r string, e, current int64) {
	t.Helper()
	err := f.Admit(context.Background(), r, e)
	var stale *tokens.StaleEpochError
	if !errors.As(err, &stale) || stale.Current != current || stale.Presented != e || stale.Resource != r {
		t.Fatalf("Admit(%q, %d) = %v, want stale with current %d", r, e, err, current)
	}
}

// unavailable fails t unless Admit(r, e) fails as unavailable, as while the
// store is down.
func unavailable(t *testing.T, f *tokens.Fence, r string, e int64) {
	t.Helper()
	var u *tokens.UnavailableError
	if err := f.Admit(context.Background(), r, e); !errors.As(err, &u) {
		t.Fatalf("Admit(%q, %d) with store down = %v, want *UnavailableError", r, e, err)
	}
}

func TestFenceExclusiveAnswersFromMemory(t *testing.T) {
	f, s := observedFence(t, false)
	admitted(t, f, "r", 1)
	admitted(t, f, "r", 2)
	for i := 0; i < 100; i++ {
		admitted(t, f, "r", 2)
		refused(t, f, "r", 1, 2)
	}
	if c, a := s.currents.Load(), s.advances.Load(); c != 1 || a != 2 {
		t.Fatalf("store calls: %d reads, %d advances; want 1 load and 2 advances", c, a)
	}
	// The cache is authoritative for an exclusive store, so the current
	// epoch is admitted even while the store is failing, but a raise is not.
	s.down.Store(true)
	admitted(t, f, "r", 2)
	unavailable(t, f, "r", 3)
	s.down.Store(false)
	admitted(t, f, "r", 3)
}

func TestFenceSharedConfirmsWithStore(t *testing.T) {
	f, s := observedFence(t, true)
	admitted(t, f, "r", 5)
	admitted(t, f, "r", 5)
	// One read after the raise (is the resource leased, its grant live?),
	// and one that confirms the equal epoch.
	if s.currents.Load() != 2 {
		t.Fatalf("raise and equal epoch confirmed with %d reads, want 2", s.currents.Load())
	}
	// Stale against the cache: refused without a store call.
	before := s.currents.Load() + s.advances.Load()
	refused(t, f, "r", 4, 5)
	if after := s.currents.Load() + s.advances.Load(); after != before {
		t.Fatalf("stale write cost %d store calls, want 0", after-before)
	}
	// Another replica raises the HWM behind this fence's back.
	if _, err := s.Store.Advance(context.Background(), "r", 9); err != nil {
		t.Fatal(err)
	}
	refused(t, f, "r", 5, 9)
	if f.Cached("r") != 9 {
		t.Fatalf("cache = %d after learning 9", f.Cached("r"))
	}
	refused(t, f, "r", 8, 9)
	admitted(t, f, "r", 9)
}

func TestFenceSharedFailsClosed(t *testing.T) {
	f, s := observedFence(t, true)
	admitted(t, f, "r", 5)
	s.down.Store(true)
	unavailable(t, f, "r", 5)
	unavailable(t, f, "r", 6)
	// Stale is still known from memory.
	refused(t, f, "r", 4, 5)
	s.down.Store(false)
	admitted(t, f, "r", 6)
}

func TestFenceCoalescesConfirmations(t *testing.T) {
	f, s := observedFence(t, true)
	admitted(t, f, "r", 3)
	s.currents.Store(0)
	s.gate = make(chan struct{})
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- f.Admit(context.Background(), "r", 3)
		}()
	}
	// Release reads until every request is answered; count how many it took.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for released := false; !released; {
		select {
		case s.gate <- struct{}{}:
		case <-done:
			released = true
		}
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Admit: %v", err)
		}
	}
	if c := s.currents.Load(); c >= n {
		t.Fatalf("%d requests made %d store reads; want them coalesced", n, c)
	}
	t.Logf("%d concurrent confirmations took %d store reads", n, s.currents.Load())
}

// TestFenceConfirmCallerGivesUp: a request whose context ends while its
// confirmation is in flight is answered at once as unavailable, and a
// request that arrived during that read is still confirmed, by a read of its
// own.
func TestFenceConfirmCallerGivesUp(t *testing.T) {
	f, s := observedFence(t, true)
	admitted(t, f, "r", 3)
	s.currents.Store(0)
	s.gate = make(chan struct{})

	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- f.Admit(ctx, "r", 3) }()
	for s.currents.Load() != 1 {
		time.Sleep(time.Millisecond) // until the shared read is in flight
	}
	stays := make(chan error, 1)
	go func() { stays <- f.Admit(context.Background(), "r", 3) }()
	cancel()
	var u *tokens.UnavailableError
	if err := <-gaveUp; !errors.As(err, &u) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Admit with its context cancelled = %v, want *UnavailableError wrapping context.Canceled", err)
	}
	s.gate <- struct{}{} // the read that was in flight when the second arrived
	s.gate <- struct{}{} // the read that answers it
	if err := <-stays; err != nil {
		t.Fatalf("Admit still waiting = %v, want admitted", err)
	}
	if c := s.currents.Load(); c != 2 {
		t.Fatalf("%d store reads, want 2", c)
	}
}

func TestFenceBeyondCacheStaysCorrect(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			s := newObserved(t, shared)
			f := tokens.NewFence(s, tokens.FenceOptions{MaxCached: 1})
			admitted(t, f, "cached", 2)
			admitted(t, f, "uncached", 2)
			admitted(t, f, "uncached", 3)
			admitted(t, f, "uncached", 3)
			refused(t, f, "uncached", 2, 3)
			if got, err := f.Current(context.Background(), "uncached"); err != nil || got != 3 {
				t.Fatalf("Current = %d, %v", got, err)
			}
		})
	}
}

func TestFenceRejectsInvalidInput(t *testing.T) {
	f, _ := observedFence(t, false)
	if err := f.Admit(context.Background(), "r", 0); !errors.Is(err, tokens.ErrInvalidEpoch) {
		t.Fatalf("Admit(0) = %v", err)
	}
	if err := f.Admit(context.Background(), "", 1); !errors.Is(err, tokens.ErrInvalidResource) {
		t.Fatalf("Admit(\"\") = %v", err)
	}
}

func TestFenceConcurrentNeverAdmitsBelowCompleted(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			f, _ := observedFence(t, shared)
			// completed holds the highest epoch whose admission returned.
			var completed atomic.Int64
			var wg sync.WaitGroup
			for w := 0; w < 8; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for i := 1; i <= 200; i++ {
						e := int64(i*8 + w%3)
						floor := completed.Load()
						err := f.Admit(context.Background(), "r", e)
						if err == nil {
							if e < floor {
								t.Errorf("admitted %d after %d had been admitted", e, floor)
							}
							raiseTo(&completed, e)
						}
					}
				}(w)
			}
			wg.Wait()
		})
	}
}

func raiseTo(v *atomic.Int64, h int64) {
	for old := v.Load(); h > old && !v.CompareAndSwap(old, h); old = v.Load() {
	}
}

// TestFenceAcquireKeepsCacheOnVerdicts: over an exclusive store, a refused
// acquire (held, owned, exhausted) is a verdict that leaves the exact cache
// in force, while an acquire whose outcome is unknown makes the fence
// reload the HWM before it answers from memory again.
func TestFenceAcquireKeepsCacheOnVerdicts(t *testing.T) {
	owner := tokens.Caller{Name: "key-one"}
	acquire := func(f *tokens.Fence, holder string, by tokens.Caller) (tokens.Grant, error) {
		return f.Acquire(context.Background(), "r", holder, tokens.Terms{TTL: time.Minute}, by)
	}
	heldByNodeA := func(t *testing.T, f *tokens.Fence, _ *observedStore) int64 {
		g, err := acquire(f, "node-a", owner)
		if err != nil {
			t.Fatal(err)
		}
		return g.Epoch
	}
	// Each case prepares the fence and returns the HWM; then holder
	// acquires r as by, and want accepts the error that must follow.
	cases := []struct {
		name    string
		prepare func(t *testing.T, f *tokens.Fence, s *observedStore) int64
		holder  string
		by      tokens.Caller
		want    func(error) bool
		reload  bool
	}{
		{"exhausted", func(t *testing.T, f *tokens.Fence, _ *observedStore) int64 {
			admitted(t, f, "r", math.MaxInt64)
			return math.MaxInt64
		}, "node-a", owner, func(err error) bool { return errors.As(err, new(*tokens.EpochExhaustedError)) }, false},
		{"held", heldByNodeA, "node-b", owner, func(err error) bool { return errors.As(err, new(*tokens.LeaseHeldError)) }, false},
		{"owned", heldByNodeA, "node-a", tokens.Caller{Name: "key-two"}, func(err error) bool { return errors.As(err, new(*tokens.LeaseOwnedError)) }, false},
		{"unknown outcome", func(t *testing.T, f *tokens.Fence, s *observedStore) int64 {
			admitted(t, f, "r", 4)
			s.acquireErr = errors.New("connection reset after commit")
			return 5 // the grant happened
		}, "node-a", owner, func(err error) bool { return err != nil && !tokens.IsVerdict(err) }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, s := observedFence(t, false)
			hwm := c.prepare(t, f, s)
			if _, err := acquire(f, c.holder, c.by); !c.want(err) {
				t.Fatalf("Acquire = %v", err)
			}
			s.acquireErr = nil
			before := s.currents.Load()
			admitted(t, f, "r", hwm)
			if hwm > 1 {
				refused(t, f, "r", hwm-1, hwm)
			}
			if reloaded := s.currents.Load() > before; reloaded != c.reload {
				t.Fatalf("reloaded the HWM: %v, want %v", reloaded, c.reload)
			}
		})
	}
}
