package sourcetest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens/source"
)

// held wraps a Source so that a read can be held in flight after it read:
// each read reads the wrapped Source, reports on started, then answers only
// once release gets a value (or fails when its context ends).
type held struct {
	source.Source
	started chan struct{}
	release chan struct{}
	reads   atomic.Int64
}

func hold(s source.Source) *held {
	return &held{Source: s, started: make(chan struct{}, 64), release: make(chan struct{})}
}

func (h *held) Current(ctx context.Context, resource string) (source.Leader, error) {
	h.reads.Add(1)
	l, err := h.Source.Current(ctx, resource)
	h.started <- struct{}{}
	select {
	case <-h.release:
		return l, err
	case <-ctx.Done():
		return source.Leader{}, source.Unavailable(resource, ctx.Err())
	}
}

// wait fails t unless a read starts within 10 s.
func (h *held) wait(t *testing.T) {
	t.Helper()
	select {
	case <-h.started:
	case <-time.After(10 * time.Second):
		t.Fatal("no read started")
	}
}

// releaseUntil releases held reads until done is closed.
func (h *held) releaseUntil(t *testing.T, done <-chan struct{}) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case h.release <- struct{}{}:
		case <-done:
			return
		case <-deadline:
			t.Fatal("callers still waiting after 30 s")
		}
	}
}

// checks runs n calls of c.Check in goroutines; the returned channel is
// closed once every call returned, and errs then holds their errors.
func checks(ctx context.Context, c *source.Coalesced, r string, epoch int64, n int) (done chan struct{}, errs chan error) {
	done, errs = make(chan struct{}), make(chan error, n)
	var left atomic.Int64
	left.Store(int64(n))
	for range n {
		go func() {
			errs <- c.Check(ctx, r, epoch)
			if left.Add(-1) == 0 {
				close(errs)
				close(done)
			}
		}()
	}
	return done, errs
}

// testCoalescedFresh: checks that arrive while a read is in flight are not
// answered by it (it started before a takeover they must see), and share
// later reads. The exact bound, two reads per burst, is the coalescer's own
// test.
func testCoalescedFresh(t *testing.T, h Harness) {
	b := h.Shared(t)
	s, r, e1 := leading(t, b)
	src := hold(s)
	c := coalesced(t, src)
	ctx := Context(t, 30*time.Second)

	firstDone, firstErr := checks(ctx, c, r, e1, 1)
	src.wait(t) // it read node-a; hold its answer
	b.Election.Lapse(t, r)
	e2 := b.Election.Acquire(t, r, "node-b")

	const n = 16
	lateDone, lateErrs := checks(ctx, c, r, e2, n)
	time.Sleep(20 * time.Millisecond) // let the late checks queue up
	src.releaseUntil(t, firstDone)
	if err := <-firstErr; err != nil {
		t.Fatalf("Check of epoch %d, asked while node-a led: %v", e1, err)
	}
	src.releaseUntil(t, lateDone)
	for err := range lateErrs {
		if err != nil {
			t.Fatalf("Check of epoch %d, asked after node-b took over: %v (answered by a read older than the call?)", e2, err)
		}
	}
	if reads := src.reads.Load(); reads >= n+1 {
		t.Fatalf("%d reads for %d checks: not coalesced", reads, n+1)
	} else {
		t.Logf("%d reads for %d checks", reads, n+1)
	}
}

// testCoalescedCallerGivesUp: a check whose context ends while it waits
// fails closed at once; checks still waiting get their answer.
func testCoalescedCallerGivesUp(t *testing.T, h Harness) {
	s, r, e := leading(t, h.Shared(t))
	src := hold(s)
	c := coalesced(t, src)

	firstDone, firstErr := checks(Context(t, 30*time.Second), c, r, e, 1)
	src.wait(t)
	quitter, quit := context.WithCancel(context.Background())
	quitDone, quitErr := checks(quitter, c, r, e, 1)
	stayDone, stayErr := checks(Context(t, 30*time.Second), c, r, e, 1)
	quit()
	select {
	case <-quitDone:
	case <-time.After(5 * time.Second):
		t.Fatal("a check whose context was cancelled is still waiting")
	}
	err := <-quitErr
	MustUnavailable(t, "Check with its context cancelled", err)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Check with its context cancelled = %v, want it to wrap context.Canceled", err)
	}
	src.releaseUntil(t, firstDone)
	src.releaseUntil(t, stayDone)
	for _, err := range []error{<-firstErr, <-stayErr} {
		if err != nil {
			t.Fatalf("Check of the leader's epoch: %v", err)
		}
	}
}
