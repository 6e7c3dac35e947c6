package source

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// fakeSource answers its leader, or err; with block it waits for its
// context to end instead. (Sharing and freshness of reads are
// tokens/internal/coalesce's tests; sourcetest runs Coalesced over real backends.)
type fakeSource struct {
	leader Leader
	err    error
	block  bool
	closes atomic.Int64
}

func (f *fakeSource) Current(ctx context.Context, _ string) (Leader, error) {
	if f.block {
		<-ctx.Done()
		return Leader{}, ctx.Err()
	}
	return f.leader, f.err
}

func (f *fakeSource) Close() error {
	f.closes.Add(1)
	return nil
}

func mustUnavailable(t *testing.T, what string, err error, wrapped error) {
	t.Helper()
	var u *tokens.UnavailableError
	if !errors.As(err, &u) || u.Op != "epoch source" || u.Resource != "r" || !errors.Is(err, wrapped) {
		t.Fatalf("%s = %v, want a *tokens.UnavailableError for %q wrapping %v", what, err, "r", wrapped)
	}
}

// TestCoalescedVerdicts: Check answers with Check's verdicts on what the
// wrapped source read.
func TestCoalescedVerdicts(t *testing.T) {
	c := Coalesce(&fakeSource{leader: Leader{Held: true, Epoch: 4, Holder: "a", Live: true}}, time.Second)
	defer c.Close()
	if err := c.Check(context.Background(), "r", 4); err != nil {
		t.Fatalf("Check(4) = %v", err)
	}
	var stale *tokens.StaleEpochError
	if err := c.Check(context.Background(), "r", 3); !errors.As(err, &stale) || stale.Current != 4 {
		t.Fatalf("Check(3) = %v, want stale at 4", err)
	}
	var notIssued *tokens.EpochNotIssuedError
	if err := c.Check(context.Background(), "r", 5); !errors.As(err, &notIssued) || notIssued.Issued != 4 {
		t.Fatalf("Check(5) = %v, want not issued above 4", err)
	}
}

// TestCoalescedUnavailable: a failed read, a read past the timeout, a
// caller that gives up and a closed source are all unavailable.
func TestCoalescedUnavailable(t *testing.T) {
	boom := errors.New("boom")
	failing := Coalesce(&fakeSource{err: boom}, time.Second)
	defer failing.Close()
	mustUnavailable(t, "Check of a failing source", failing.Check(context.Background(), "r", 1), boom)
	_, err := failing.Current(context.Background(), "r")
	mustUnavailable(t, "Current of a failing source", err, boom)

	hung := Coalesce(&fakeSource{block: true}, 100*time.Millisecond)
	defer hung.Close()
	start := time.Now()
	mustUnavailable(t, "Check of a hung source", hung.Check(context.Background(), "r", 1), context.DeadlineExceeded)
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Check took %v with a 100ms timeout", took)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	mustUnavailable(t, "Check with an ended context", hung.Check(ctx, "r", 1), context.Canceled)

	f := &fakeSource{leader: Leader{Held: true, Epoch: 1, Live: true}}
	closed := Coalesce(f, 0)
	for range 2 {
		if err := closed.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if n := f.closes.Load(); n != 1 {
		t.Fatalf("wrapped source closed %d times, want 1", n)
	}
	_, err = closed.Current(context.Background(), "r")
	mustUnavailable(t, "Current after Close", err, ErrClosed)
	mustUnavailable(t, "Check after Close", closed.Check(context.Background(), "r", 1), ErrClosed)
}
