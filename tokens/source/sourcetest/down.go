package sourcetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens/source"
)

// testClosed: a closed Source fails closed, wrapping source.ErrClosed, and
// may be closed again; so does a Coalesced, which closes what it wraps.
func testClosed(t *testing.T, h Harness) {
	b := h.Shared(t)
	s, r, e := leading(t, b)
	MustCheck(t, s, r, e, Admit)
	for i := range 2 {
		if err := s.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	mustClosed(t, "Current after Close", readErr(t, s, r))

	inner := open(t, b)
	c := source.Coalesce(inner, 10*time.Second)
	if err := c.Check(Context(t, 10*time.Second), r, e); err != nil {
		t.Fatalf("Coalesced.Check: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Coalesced.Close: %v", err)
	}
	mustClosed(t, "Coalesced.Check after Close", c.Check(Context(t, 10*time.Second), r, e))
	mustClosed(t, "Current of the Source a closed Coalesced wrapped", readErr(t, inner, r))
}

// readErr returns the error of reading r's leader from s.
func readErr(t *testing.T, s source.Source, r string) error {
	_, err := s.Current(Context(t, 10*time.Second), r)
	return err
}

// mustClosed fails t unless err is a closed Source failing closed.
func mustClosed(t *testing.T, what string, err error) {
	t.Helper()
	MustUnavailable(t, what, err)
	if !errors.Is(err, source.ErrClosed) {
		t.Fatalf("%s = %v, want it to wrap source.ErrClosed", what, err)
	}
}

// testCancelledContext: a read whose context has ended fails closed at
// once, directly and through a Coalesced.
func testCancelledContext(t *testing.T, h Harness) {
	s, r, e := leading(t, h.Shared(t))
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	c := coalesced(t, s)
	for _, ctx := range []context.Context{cancelled, expired} {
		start := time.Now()
		_, err := s.Current(ctx, r)
		MustUnavailable(t, "Current with an ended context", err)
		MustUnavailable(t, "Coalesced.Check with an ended context", c.Check(ctx, r, e))
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("reads with an ended context took %v", took)
		}
	}
	MustCheck(t, s, r, e, Admit) // the Source is still usable
}

// testServerDown: with the server down, reads fail closed within their
// contexts, Open fails, and the same Source answers again once the server
// is back.
func testServerDown(t *testing.T, h Harness) {
	b := h.Own(t)
	s, r, e := leading(t, b)
	c := source.Coalesce(s, time.Second)
	defer c.Close()
	MustCheck(t, s, r, e, Admit)

	b.Stop(t)
	for i := range 2 {
		start := time.Now()
		_, err := s.Current(Context(t, time.Second), r)
		MustUnavailable(t, "Current with the server down", err)
		MustUnavailable(t, "Coalesced.Check with the server down", c.Check(context.Background(), r, e))
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("reads #%d took %v with 1s bounds", i+1, took)
		}
		t.Logf("Current #%d while down: %v", i+1, err)
	}
	if s2, err := b.Open(Context(t, 3*time.Second)); err == nil {
		s2.Close()
		t.Fatal("Open with the server down succeeded")
	}

	b.Restart(t)
	// A connection the restart broke may fail a call or two.
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := c.Check(context.Background(), r, e)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Coalesced.Check after Restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	MustLeader(t, s, r, h.leader(e, "node-a", true))
}
