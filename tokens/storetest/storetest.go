// Package storetest is the contract suite every tokens.Store backend must
// pass. A backend's test calls Run with a function that prepares fresh,
// empty state and returns a Factory over it.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// Factory opens a new client of one store state. Every call returns a
// separate client over the same state: after closing one, the next call is a
// restart; with two open at once, they are two replicas. The factory closes
// what it opened when the test ends; Close may also be called earlier.
type Factory func(t *testing.T) tokens.Store

// Run runs the contract suite. fresh is called once per subtest and must
// return a Factory over state that no other subtest sees.
func Run(t *testing.T, fresh func(t *testing.T) Factory) {
	runCases(t, fresh, []contractCase{
		{"UnknownIsZero", testUnknownIsZero},
		{"AdvanceSequence", testAdvanceSequence},
		{"IntegerOrder", testIntegerOrder},
		{"InvalidEpoch", testInvalidEpoch},
		{"InvalidResource", testInvalidResource},
		{"ResourceNames", testResourceNames},
		{"IndependentResources", testIndependentResources},
		{"ConcurrentAdvance", testConcurrentAdvance},
		{"SurvivesRestart", testSurvivesRestart},
		{"SharedBetweenClients", testSharedBetweenClients},
		{"CancelledContext", testCancelledContext},
		{"Ping", testPing},
	})
}

// contractCase is one case of a contract suite: what it checks of the
// state a Factory opens.
type contractCase struct {
	name string
	fn   func(t *testing.T, f Factory)
}

// runCases runs each case as a subtest with a Factory over fresh state of
// its own.
func runCases(t *testing.T, fresh func(t *testing.T) Factory, cases []contractCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, fresh(t))
		})
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// mustAdvance advances and fails the test unless epoch was admitted.
func mustAdvance(t *testing.T, s tokens.Store, res string, epoch int64) {
	t.Helper()
	got, err := s.Advance(ctx(t), res, epoch)
	if err != nil {
		t.Fatalf("Advance(%q, %d): %v", res, epoch, err)
	}
	if got != epoch {
		t.Fatalf("Advance(%q, %d) returned HWM %d, want %d", res, epoch, got, epoch)
	}
}

// mustBeStale advances and fails the test unless epoch was refused as stale
// with the given current HWM.
func mustBeStale(t *testing.T, s tokens.Store, res string, epoch, current int64) {
	t.Helper()
	_, err := s.Advance(ctx(t), res, epoch)
	var stale *tokens.StaleEpochError
	if !errors.As(err, &stale) {
		t.Fatalf("Advance(%q, %d) = %v, want *StaleEpochError", res, epoch, err)
	}
	if stale.Resource != res || stale.Presented != epoch || stale.Current != current {
		t.Fatalf("Advance(%q, %d) stale = %+v, want resource %q presented %d current %d",
			res, epoch, *stale, res, epoch, current)
	}
}

func mustCurrent(t *testing.T, s tokens.Store, res string, want int64) {
	t.Helper()
	got, err := s.Current(ctx(t), res)
	if err != nil {
		t.Fatalf("Current(%q): %v", res, err)
	}
	if got != want {
		t.Fatalf("Current(%q) = %d, want %d", res, got, want)
	}
}

func testUnknownIsZero(t *testing.T, f Factory) {
	mustCurrent(t, f(t), "never-seen", 0)
}

func testAdvanceSequence(t *testing.T, f Factory) {
	s := f(t)
	mustAdvance(t, s, "r", 1)
	mustAdvance(t, s, "r", 2)
	mustAdvance(t, s, "r", 2)
	mustBeStale(t, s, "r", 1, 2)
	mustCurrent(t, s, "r", 2)
}

func testIntegerOrder(t *testing.T, f Factory) {
	s := f(t)
	const p53 = int64(1) << 53
	cases := []struct{ low, high int64 }{
		{9, 10},
		{99, 100},
		{999, 1000},
		{p53, p53 + 1},
		{p53 + 1, p53 + 2},
		{math.MaxInt64 - 1, math.MaxInt64},
	}
	for i, c := range cases {
		res := fmt.Sprintf("order-%d", i)
		mustAdvance(t, s, res, c.low)
		mustAdvance(t, s, res, c.high)
		mustBeStale(t, s, res, c.low, c.high)
		mustCurrent(t, s, res, c.high)
	}
	// A byte-wise comparison of decimal strings would take "9" > "10".
	mustAdvance(t, s, "bytes", 10)
	mustBeStale(t, s, "bytes", 9, 10)
	mustAdvance(t, s, "bytes", 100)
	mustBeStale(t, s, "bytes", 99, 100)
	mustBeStale(t, s, "bytes", 11, 100)
}

func testInvalidEpoch(t *testing.T, f Factory) {
	s := f(t)
	mustAdvance(t, s, "r", 3)
	for _, e := range []int64{0, -1, -3, math.MinInt64} {
		_, err := s.Advance(ctx(t), "r", e)
		if !errors.Is(err, tokens.ErrInvalidEpoch) {
			t.Fatalf("Advance(r, %d) = %v, want ErrInvalidEpoch", e, err)
		}
	}
	_, err := s.Advance(ctx(t), "fresh", 0)
	if !errors.Is(err, tokens.ErrInvalidEpoch) {
		t.Fatalf("Advance(fresh, 0) = %v, want ErrInvalidEpoch", err)
	}
	mustCurrent(t, s, "r", 3)
	mustCurrent(t, s, "fresh", 0)
}

func testInvalidResource(t *testing.T, f Factory) {
	s := f(t)
	long := make([]byte, tokens.MaxResourceLen+1)
	for i := range long {
		long[i] = 'a'
	}
	for _, res := range []string{"", string(long), "a\x00b", "bad\xff", "new\nline"} {
		if _, err := s.Advance(ctx(t), res, 1); !errors.Is(err, tokens.ErrInvalidResource) {
			t.Fatalf("Advance(%q) = %v, want ErrInvalidResource", res, err)
		}
		if _, err := s.Current(ctx(t), res); !errors.Is(err, tokens.ErrInvalidResource) {
			t.Fatalf("Current(%q) = %v, want ErrInvalidResource", res, err)
		}
	}
}

func testResourceNames(t *testing.T, f Factory) {
	s := f(t)
	long := make([]byte, tokens.MaxResourceLen)
	for i := range long {
		long[i] = 'z'
	}
	names := []string{"email:tenant-42", "a/b/c", "/leading/slash", "with space", "ünïcödé-✓", "%2F", string(long), "x", "x/"}
	for i, n := range names {
		mustAdvance(t, s, n, int64(i+1))
	}
	for i, n := range names {
		mustCurrent(t, s, n, int64(i+1))
	}
}

func testIndependentResources(t *testing.T, f Factory) {
	s := f(t)
	mustAdvance(t, s, "a", 50)
	mustAdvance(t, s, "b", 1)
	mustCurrent(t, s, "a", 50)
	mustCurrent(t, s, "b", 1)
	// A prefix of another resource's name is a different resource.
	mustAdvance(t, s, "ab", 2)
	mustCurrent(t, s, "a", 50)
}

func testConcurrentAdvance(t *testing.T, f Factory) {
	s := f(t)
	const workers, each = 8, 25
	var (
		mu  sync.Mutex
		max int64
		wg  sync.WaitGroup
	)
	errc := make(chan error, workers*each)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 7))
			for i := 0; i < each; i++ {
				e := rng.Int64N(1000) + 1
				mu.Lock()
				if e > max {
					max = e
				}
				mu.Unlock()
				got, err := s.Advance(context.Background(), "contended", e)
				var stale *tokens.StaleEpochError
				switch {
				case err == nil && got != e:
					errc <- fmt.Errorf("admitted %d but HWM reported %d", e, got)
				case errors.As(err, &stale) && stale.Current <= e:
					errc <- fmt.Errorf("refused %d as stale with current %d", e, stale.Current)
				case err != nil && stale == nil:
					errc <- fmt.Errorf("advance %d: %w", e, err)
				}
			}
		}(uint64(w))
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	mustCurrent(t, s, "contended", max)
}

func testSurvivesRestart(t *testing.T, f Factory) {
	s := f(t)
	mustAdvance(t, s, "durable", 41)
	mustAdvance(t, s, "durable", 42)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s2 := f(t)
	mustCurrent(t, s2, "durable", 42)
	mustBeStale(t, s2, "durable", 41, 42)
	mustAdvance(t, s2, "durable", 43)
}

// twoClients opens two clients of f's state, as two replicas would. An
// exclusive store has one writer process by construction (the restart
// cases cover its only way of sharing state): for one, twoClients logs so
// and returns ok false.
func twoClients(t *testing.T, f Factory) (s1, s2 tokens.Store, ok bool) {
	s1 = f(t)
	if s1.Exclusive() {
		t.Log("exclusive store: no second client to test")
		return s1, nil, false
	}
	return s1, f(t), true
}

func testSharedBetweenClients(t *testing.T, f Factory) {
	s1, s2, ok := twoClients(t, f)
	if !ok {
		return
	}
	mustAdvance(t, s1, "shared", 5)
	mustCurrent(t, s2, "shared", 5)
	mustBeStale(t, s2, "shared", 3, 5)
	mustAdvance(t, s2, "shared", 7)
	mustBeStale(t, s1, "shared", 6, 7)
	mustCurrent(t, s1, "shared", 7)
}

func testCancelledContext(t *testing.T, f Factory) {
	s := f(t)
	mustAdvance(t, s, "r", 1)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Advance(c, "r", 2); err == nil {
		t.Fatal("Advance with a cancelled context succeeded")
	}
	if _, err := s.Current(c, "r"); err == nil {
		t.Fatal("Current with a cancelled context succeeded")
	}
	mustCurrent(t, s, "r", 1)
}

func testPing(t *testing.T, f Factory) {
	if err := f(t).Ping(ctx(t)); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}
