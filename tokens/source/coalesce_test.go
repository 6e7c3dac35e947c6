package source

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeSource is a Source whose reads are stamped with a logical clock that
// the callers share: a read answers Leader{Epoch: the clock when the read
// started, Holder: the resource}. A caller that stamps the clock before
// calling can thus tell whether the read that answered it started after it
// called (Epoch > its stamp).
type fakeSource struct {
	clock *atomic.Int64

	gate    chan struct{} // when non-nil, each read waits for a value (or its ctx)
	started chan string   // when non-nil, each read sends its resource on start
	delay   time.Duration // when gate is nil, each read sleeps up to this long
	err     error         // returned by every read when set

	reads     atomic.Int64
	cancelled atomic.Int64 // reads that ended because their ctx did
	closes    atomic.Int64

	mu       sync.Mutex
	inflight map[string]int
	overlap  bool // two reads of one resource ran at once
}

func newFake() *fakeSource {
	return &fakeSource{clock: new(atomic.Int64), inflight: make(map[string]int)}
}

func (f *fakeSource) Current(ctx context.Context, resource string) (Leader, error) {
	start := f.clock.Add(1)
	f.reads.Add(1)
	f.mu.Lock()
	f.inflight[resource]++
	if f.inflight[resource] > 1 {
		f.overlap = true
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inflight[resource]--
		f.mu.Unlock()
	}()
	if f.started != nil {
		f.started <- resource
	}
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			f.cancelled.Add(1)
			return Leader{}, fmt.Errorf("fake read: %w", ctx.Err())
		}
	} else if f.delay > 0 {
		time.Sleep(rand.N(f.delay))
	}
	if f.err != nil {
		return Leader{}, f.err
	}
	return Leader{Epoch: start, Holder: resource, Live: true}, nil
}

func (f *fakeSource) Close() error {
	f.closes.Add(1)
	return nil
}

// result is what one caller got, with the clock stamped before it called.
type result struct {
	arrived int64
	l       Leader
	err     error
}

// call stamps the clock, then calls Current in a new goroutine and delivers
// the result on the returned channel.
func call(ctx context.Context, s Source, f *fakeSource, resource string) <-chan result {
	ch := make(chan result, 1)
	arrived := f.clock.Add(1)
	go func() {
		l, err := s.Current(ctx, resource)
		ch <- result{arrived, l, err}
	}()
	return ch
}

// waiters returns how many callers wait for resource's running and next
// rounds.
func waiters(c *coalescer, resource string) (running, next int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[resource]
	if g == nil {
		return 0, 0
	}
	running = g.running.waiters
	if g.next != nil {
		next = g.next.waiters
	}
	return running, next
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
		t.Fatalf("Current: %v", r.err)
	}
	if r.l.Epoch <= r.arrived {
		t.Fatalf("answered by a read that started at %d, before the caller arrived at %d", r.l.Epoch, r.arrived)
	}
}

// TestCoalesceFreshRead: callers arriving while a read runs are not
// answered by it; they all share one read that starts after it.
func TestCoalesceFreshRead(t *testing.T) {
	f := newFake()
	f.gate = make(chan struct{})
	f.started = make(chan string, 10)
	s := Coalesce(f)
	defer s.Close()
	c := s.(*coalescer)
	ctx := context.Background()

	first := call(ctx, s, f, "r")
	recv(t, "first read", f.started)

	const n = 100
	late := make([]<-chan result, n)
	for i := range late {
		late[i] = call(ctx, s, f, "r")
	}
	waitFor(t, "late callers to join the next round", func() bool {
		_, next := waiters(c, "r")
		return next == n
	})
	if got := f.reads.Load(); got != 1 {
		t.Fatalf("%d reads while the first runs, want 1", got)
	}

	f.gate <- struct{}{} // finish the first read
	r := recv(t, "first caller", first)
	mustFresh(t, r)
	recv(t, "second read", f.started)
	f.gate <- struct{}{}
	var epoch int64
	for i, ch := range late {
		r := recv(t, "late caller", ch)
		mustFresh(t, r)
		if i == 0 {
			epoch = r.l.Epoch
		} else if r.l.Epoch != epoch {
			t.Fatalf("late callers answered by different reads: %d and %d", epoch, r.l.Epoch)
		}
	}
	if got := f.reads.Load(); got != 2 {
		t.Fatalf("%d reads for %d callers, want 2", got, n+1)
	}
	waitFor(t, "the group to retire", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.groups) == 0
	})
}

// TestCoalesceConcurrent hammers several resources and checks every answer
// for freshness, that reads of one resource never overlap, and that reads
// are shared.
func TestCoalesceConcurrent(t *testing.T) {
	f := newFake()
	f.delay = 2 * time.Millisecond
	s := Coalesce(f)
	defer s.Close()

	const goroutines, calls = 64, 50
	resources := []string{"a", "b", "c"}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				res := resources[(g+i)%len(resources)]
				arrived := f.clock.Add(1)
				l, err := s.Current(context.Background(), res)
				switch {
				case err != nil:
					errs <- err
					return
				case l.Epoch <= arrived:
					errs <- fmt.Errorf("answered by a read that started at %d, before the caller arrived at %d", l.Epoch, arrived)
					return
				case l.Holder != res:
					errs <- fmt.Errorf("asked about %q, answered about %q", res, l.Holder)
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
		t.Error("two reads of one resource ran at once")
	}
	reads, total := f.reads.Load(), int64(goroutines*calls)
	t.Logf("%d reads for %d calls", reads, total)
	if reads > total/4 {
		t.Errorf("%d reads for %d concurrent calls: not coalesced", reads, total)
	}
}

// TestCoalesceError: a failed read fails every caller it answers.
func TestCoalesceError(t *testing.T) {
	f := newFake()
	f.gate = make(chan struct{})
	f.started = make(chan string, 10)
	boom := errors.New("boom")
	f.err = boom
	s := Coalesce(f)
	defer s.Close()
	c := s.(*coalescer)

	first := call(context.Background(), s, f, "r")
	recv(t, "first read", f.started)
	a, b := call(context.Background(), s, f, "r"), call(context.Background(), s, f, "r")
	waitFor(t, "two callers in the next round", func() bool { _, n := waiters(c, "r"); return n == 2 })
	f.gate <- struct{}{}
	recv(t, "second read", f.started)
	f.gate <- struct{}{}
	for _, ch := range []<-chan result{first, a, b} {
		if r := recv(t, "caller", ch); !errors.Is(r.err, boom) {
			t.Fatalf("Current = %v, want %v", r.err, boom)
		}
	}
}

// TestCoalesceResourcesIndependent: a slow read of one resource does not
// delay another's.
func TestCoalesceResourcesIndependent(t *testing.T) {
	f := newFake()
	f.gate = make(chan struct{})
	f.started = make(chan string, 10)
	s := Coalesce(f)
	defer s.Close()

	a := call(context.Background(), s, f, "a")
	b := call(context.Background(), s, f, "b")
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

// TestCoalesceCallerGivesUp: a caller whose context ends returns at once; a
// round everyone left is cancelled (running) or never started (queued).
func TestCoalesceCallerGivesUp(t *testing.T) {
	f := newFake()
	f.gate = make(chan struct{})
	f.started = make(chan string, 10)
	s := Coalesce(f)
	defer s.Close()
	c := s.(*coalescer)

	ctxA, cancelA := context.WithCancel(context.Background())
	a := call(ctxA, s, f, "r")
	recv(t, "first read", f.started)
	ctxB, cancelB := context.WithCancel(context.Background())
	b := call(ctxB, s, f, "r")
	waitFor(t, "b in the next round", func() bool { _, n := waiters(c, "r"); return n == 1 })

	cancelB()
	if r := recv(t, "b", b); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("b: Current = %v, want context.Canceled", r.err)
	}
	if _, n := waiters(c, "r"); n != 0 {
		t.Fatalf("%d callers still in the next round", n)
	}
	cancelA()
	if r := recv(t, "a", a); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("a: Current = %v, want context.Canceled", r.err)
	}
	// Nobody waits for the running read any more: it is cancelled, and the
	// abandoned next round never starts.
	waitFor(t, "the running read to be cancelled", func() bool { return f.cancelled.Load() == 1 })
	waitFor(t, "the group to retire", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.groups) == 0
	})
	if got := f.reads.Load(); got != 1 {
		t.Fatalf("%d reads, want 1 (the abandoned round must not start)", got)
	}

	// One caller leaving does not cancel a read others still wait for.
	first := call(context.Background(), s, f, "r")
	recv(t, "read 2", f.started)
	ctxC, cancelC := context.WithCancel(context.Background())
	cc := call(ctxC, s, f, "r")
	d := call(context.Background(), s, f, "r")
	waitFor(t, "c and d in the next round", func() bool { _, n := waiters(c, "r"); return n == 2 })
	f.gate <- struct{}{}
	mustFresh(t, recv(t, "first", first))
	recv(t, "read 3", f.started)
	waitFor(t, "c and d in the running round", func() bool { n, _ := waiters(c, "r"); return n == 2 })
	cancelC()
	if r := recv(t, "c", cc); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("c: Current = %v, want context.Canceled", r.err)
	}
	f.gate <- struct{}{}
	mustFresh(t, recv(t, "d", d))
	if n := f.cancelled.Load(); n != 1 {
		t.Fatalf("%d reads cancelled, want 1 (read 3 still had d)", n)
	}

	// A context that has already ended costs no read.
	before := f.reads.Load()
	if _, err := s.Current(ctxA, "r"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Current with an ended context = %v", err)
	}
	if f.reads.Load() != before {
		t.Fatal("a call with an ended context read the source")
	}
}

// TestCoalesceClose: Close releases and cancels waiting callers, closes the
// wrapped source once, and refuses later calls.
func TestCoalesceClose(t *testing.T) {
	f := newFake()
	f.gate = make(chan struct{})
	f.started = make(chan string, 10)
	s := Coalesce(f)
	c := s.(*coalescer)

	a := call(context.Background(), s, f, "r")
	recv(t, "first read", f.started)
	b := call(context.Background(), s, f, "r")
	waitFor(t, "b in the next round", func() bool { _, n := waiters(c, "r"); return n == 1 })

	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if r := recv(t, "a", a); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("a: Current = %v, want the cancelled read's error", r.err)
	}
	if r := recv(t, "b", b); !errors.Is(r.err, ErrClosed) {
		t.Fatalf("b: Current = %v, want ErrClosed", r.err)
	}
	if _, err := s.Current(context.Background(), "r"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Current after Close = %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if n := f.closes.Load(); n != 1 {
		t.Fatalf("wrapped source closed %d times, want 1", n)
	}
	if n := f.reads.Load(); n != 1 {
		t.Fatalf("%d reads, want 1", n)
	}
}
