package coalesce

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the tests if any goroutine outlives them: every read must
// have ended.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// stamp is what a fake read answers: the logical clock when the read
// started, and the key it read.
type stamp struct {
	start int64
	key   string
}

// fake is a Read whose reads are stamped with a logical clock that the
// callers share. A caller that stamps the clock before calling can thus tell
// whether the read that answered it started after it called (start > its
// stamp).
type fake struct {
	clock atomic.Int64

	gate    chan struct{} // when non-nil, each read waits for a value (or its ctx)
	started chan string   // when non-nil, each read sends its key on start
	delay   time.Duration // when gate is nil, each read sleeps up to this long
	err     error         // returned by every read when set

	reads     atomic.Int64
	cancelled atomic.Int64 // reads that ended because their ctx did

	mu       sync.Mutex
	inflight map[string]int
	overlap  bool // two reads of one key ran at once
}

func newFake() *fake { return &fake{inflight: make(map[string]int)} }

func (f *fake) read(ctx context.Context, key string) (stamp, error) {
	start := f.clock.Add(1)
	f.reads.Add(1)
	f.mu.Lock()
	f.inflight[key]++
	if f.inflight[key] > 1 {
		f.overlap = true
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inflight[key]--
		f.mu.Unlock()
	}()
	if f.started != nil {
		f.started <- key
	}
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			f.cancelled.Add(1)
			return stamp{}, fmt.Errorf("fake read: %w", ctx.Err())
		}
	} else if f.delay > 0 {
		time.Sleep(rand.N(f.delay))
	}
	if f.err != nil {
		return stamp{}, f.err
	}
	return stamp{start: start, key: key}, nil
}

// gated returns a fake whose reads wait at its gate and report their start,
// and a Group over it closed when t ends.
func gated(t *testing.T) (*fake, *Group[stamp]) {
	f := newFake()
	f.gate = make(chan struct{})
	f.started = make(chan string, 10)
	g := New(f.read)
	t.Cleanup(g.Close)
	return f, g
}

// result is what one caller got, with the clock stamped before it called.
type result struct {
	arrived int64
	s       stamp
	err     error
}

// call stamps the clock, then calls Do in a new goroutine and delivers the
// result on the returned channel.
func call(ctx context.Context, g *Group[stamp], f *fake, key string) <-chan result {
	ch := make(chan result, 1)
	arrived := f.clock.Add(1)
	go func() {
		s, err := g.Do(ctx, key)
		ch <- result{arrived, s, err}
	}()
	return ch
}

// waiters returns how many callers wait for key's running and next rounds.
func waiters(g *Group[stamp], key string) (running, next int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.keys[key]
	if f == nil {
		return 0, 0
	}
	running = f.running.waiters
	if f.next != nil {
		next = f.next.waiters
	}
	return running, next
}

func idle(g *Group[stamp]) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.keys) == 0
}

// waitFor polls cond until it holds, failing t after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func recv[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	panic("unreachable")
}

func mustFresh(t *testing.T, r result) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("Do: %v", r.err)
	}
	if r.s.start <= r.arrived {
		t.Fatalf("answered by a read that started at %d, before the caller arrived at %d", r.s.start, r.arrived)
	}
}

// TestFreshRead: callers arriving while a read runs are not answered by it;
// they all share one read that starts after it. A burst of n+1 callers costs
// two reads.
func TestFreshRead(t *testing.T) {
	f, g := gated(t)
	ctx := context.Background()

	first := call(ctx, g, f, "r")
	recv(t, "first read", f.started)

	const n = 100
	late := make([]<-chan result, n)
	for i := range late {
		late[i] = call(ctx, g, f, "r")
	}
	waitFor(t, "late callers to join the next round", func() bool {
		_, next := waiters(g, "r")
		return next == n
	})
	if got := f.reads.Load(); got != 1 {
		t.Fatalf("%d reads while the first runs, want 1", got)
	}

	f.gate <- struct{}{} // finish the first read
	mustFresh(t, recv(t, "first caller", first))
	recv(t, "second read", f.started)
	f.gate <- struct{}{}
	var start int64
	for i, ch := range late {
		r := recv(t, "late caller", ch)
		mustFresh(t, r)
		if i == 0 {
			start = r.s.start
		} else if r.s.start != start {
			t.Fatalf("late callers answered by different reads: %d and %d", start, r.s.start)
		}
	}
	if got := f.reads.Load(); got != 2 {
		t.Fatalf("%d reads for %d callers, want 2", got, n+1)
	}
	waitFor(t, "the key to retire", func() bool { return idle(g) })
}

// TestConcurrent hammers several keys and checks every answer for
// freshness, that reads of one key never overlap, and that reads are
// shared.
func TestConcurrent(t *testing.T) {
	f := newFake()
	f.delay = 2 * time.Millisecond
	g := New(f.read)
	defer g.Close()

	const goroutines, calls = 64, 50
	keys := []string{"a", "b", "c"}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for n := range goroutines {
		wg.Go(func() {
			for i := range calls {
				key := keys[(n+i)%len(keys)]
				arrived := f.clock.Add(1)
				s, err := g.Do(context.Background(), key)
				switch {
				case err != nil:
					errs <- err
					return
				case s.start <= arrived:
					errs <- fmt.Errorf("answered by a read that started at %d, before the caller arrived at %d", s.start, arrived)
					return
				case s.key != key:
					errs <- fmt.Errorf("asked about %q, answered about %q", key, s.key)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if f.overlap {
		t.Error("two reads of one key ran at once")
	}
	reads, total := f.reads.Load(), int64(goroutines*calls)
	t.Logf("%d reads for %d calls", reads, total)
	if reads > total/4 {
		t.Errorf("%d reads for %d concurrent calls: not coalesced", reads, total)
	}
}

// TestError: a failed read fails every caller it answers, with its own
// error.
func TestError(t *testing.T) {
	f, g := gated(t)
	boom := errors.New("boom")
	f.err = boom

	first := call(context.Background(), g, f, "r")
	recv(t, "first read", f.started)
	a, b := call(context.Background(), g, f, "r"), call(context.Background(), g, f, "r")
	waitFor(t, "two callers in the next round", func() bool { _, n := waiters(g, "r"); return n == 2 })
	f.gate <- struct{}{}
	recv(t, "second read", f.started)
	f.gate <- struct{}{}
	for _, ch := range []<-chan result{first, a, b} {
		if r := recv(t, "caller", ch); !errors.Is(r.err, boom) {
			t.Fatalf("Do = %v, want %v", r.err, boom)
		}
	}
}

// TestKeysIndependent: a slow read of one key does not delay another's.
func TestKeysIndependent(t *testing.T) {
	f, g := gated(t)
	a := call(context.Background(), g, f, "a")
	b := call(context.Background(), g, f, "b")
	got := map[string]bool{recv(t, "a read", f.started): true, recv(t, "a read", f.started): true}
	if !got["a"] || !got["b"] {
		t.Fatalf("reads started for %v, want a and b", got)
	}
	f.gate <- struct{}{}
	f.gate <- struct{}{}
	for _, ch := range []<-chan result{a, b} {
		mustFresh(t, recv(t, "caller", ch))
	}
}

// TestCallerGivesUp: a caller whose context ends returns at once without
// cancelling a read others still wait for; a round everyone left is
// cancelled (running) or never started (queued).
func TestCallerGivesUp(t *testing.T) {
	f, g := gated(t)

	ctxA, cancelA := context.WithCancel(context.Background())
	a := call(ctxA, g, f, "r")
	recv(t, "first read", f.started)
	ctxB, cancelB := context.WithCancel(context.Background())
	b := call(ctxB, g, f, "r")
	waitFor(t, "b in the next round", func() bool { _, n := waiters(g, "r"); return n == 1 })

	cancelB()
	if r := recv(t, "b", b); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("b: Do = %v, want context.Canceled", r.err)
	}
	if _, n := waiters(g, "r"); n != 0 {
		t.Fatalf("%d callers still in the next round", n)
	}
	cancelA()
	if r := recv(t, "a", a); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("a: Do = %v, want context.Canceled", r.err)
	}
	// Nobody waits for the running read any more: it is cancelled, and the
	// abandoned next round never starts.
	waitFor(t, "the running read to be cancelled", func() bool { return f.cancelled.Load() == 1 })
	waitFor(t, "the key to retire", func() bool { return idle(g) })
	if got := f.reads.Load(); got != 1 {
		t.Fatalf("%d reads, want 1 (the abandoned round must not start)", got)
	}

	// One caller leaving does not cancel a read others still wait for.
	first := call(context.Background(), g, f, "r")
	recv(t, "read 2", f.started)
	ctxC, cancelC := context.WithCancel(context.Background())
	c := call(ctxC, g, f, "r")
	d := call(context.Background(), g, f, "r")
	waitFor(t, "c and d in the next round", func() bool { _, n := waiters(g, "r"); return n == 2 })
	f.gate <- struct{}{}
	mustFresh(t, recv(t, "first", first))
	recv(t, "read 3", f.started)
	waitFor(t, "c and d in the running round", func() bool { n, _ := waiters(g, "r"); return n == 2 })
	cancelC()
	if r := recv(t, "c", c); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("c: Do = %v, want context.Canceled", r.err)
	}
	f.gate <- struct{}{}
	mustFresh(t, recv(t, "d", d))
	if n := f.cancelled.Load(); n != 1 {
		t.Fatalf("%d reads cancelled, want 1 (read 3 still had d)", n)
	}

	// A context that has already ended costs no read.
	before := f.reads.Load()
	if _, err := g.Do(ctxA, "r"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do with an ended context = %v", err)
	}
	if f.reads.Load() != before {
		t.Fatal("a call with an ended context read")
	}
}

type ctxKey struct{}

// TestReadContext: a read sees the values of the context of the caller that
// opened its round, but not that caller's deadline.
func TestReadContext(t *testing.T) {
	type seen struct {
		value       any
		hasDeadline bool
	}
	got := make(chan seen, 1)
	g := New(func(ctx context.Context, _ string) (int, error) {
		_, ok := ctx.Deadline()
		got <- seen{ctx.Value(ctxKey{}), ok}
		return 1, nil
	})
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), ctxKey{}, "trace"), time.Minute)
	defer cancel()
	if v, err := g.Do(ctx, "r"); v != 1 || err != nil {
		t.Fatalf("Do = %d, %v", v, err)
	}
	if s := recv(t, "the read", got); s.value != "trace" || s.hasDeadline {
		t.Fatalf("read saw value %v, deadline %v; want the caller's value and no deadline", s.value, s.hasDeadline)
	}
}

// TestClose: Close cancels the running read, releases queued callers with
// ErrClosed and refuses later calls.
func TestClose(t *testing.T) {
	f := newFake()
	f.gate = make(chan struct{})
	f.started = make(chan string, 10)
	g := New(f.read)

	a := call(context.Background(), g, f, "r")
	recv(t, "first read", f.started)
	b := call(context.Background(), g, f, "r")
	waitFor(t, "b in the next round", func() bool { _, n := waiters(g, "r"); return n == 1 })

	g.Close()
	if r := recv(t, "a", a); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("a: Do = %v, want the cancelled read's error", r.err)
	}
	if r := recv(t, "b", b); !errors.Is(r.err, ErrClosed) {
		t.Fatalf("b: Do = %v, want ErrClosed", r.err)
	}
	if _, err := g.Do(context.Background(), "r"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Do after Close = %v, want ErrClosed", err)
	}
	g.Close()
	if n := f.reads.Load(); n != 1 {
		t.Fatalf("%d reads, want 1", n)
	}
}
