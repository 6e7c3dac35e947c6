package etcdstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/etcdstore"
)

func TestStoredAsDecimal(t *testing.T) {
	c := testetcd.Start(t, 1)
	cli := c.Client(t)
	const prefix = "/decimal/"
	s := etcdstore.New(cli, prefix)
	t.Cleanup(func() { s.Close() })

	raw := func(res string) string {
		t.Helper()
		resp, err := cli.Get(timeout(t, 5*time.Second), prefix+res)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("raw Get(%q) = %v, %v", prefix+res, resp, err)
		}
		return string(resp.Kvs[0].Value)
	}
	put := func(res, v string) {
		t.Helper()
		if _, err := cli.Put(timeout(t, 5*time.Second), prefix+res, v); err != nil {
			t.Fatalf("raw Put: %v", err)
		}
	}

	mustAdvance(t, s, "r", 10)
	if got := raw("r"); got != "10" {
		t.Fatalf("stored %q, want \"10\"", got)
	}
	mustBeStale(t, s, "r", 9, 10) // "9" > "10" as bytes
	mustAdvance(t, s, "r", 9223372036854775807)
	if got := raw("r"); got != "9223372036854775807" {
		t.Fatalf("stored %q, want \"9223372036854775807\"", got)
	}

	// A value written by someone else is read as an integer too.
	put("other", "100")
	mustCurrent(t, s, "other", 100)
	mustBeStale(t, s, "other", 99, 100)
	mustAdvance(t, s, "other", 1000)

	for _, bad := range []string{"abc", "", "0", "-5", " 10", "10 ", "1e3", "10.0", "+7", "9223372036854775808", "0x10"} {
		put("bad", bad)
		_, err := s.Current(timeout(t, 5*time.Second), "bad")
		mustBeUnavailable(t, "Current of "+bad, err, "current")
		if !errors.Is(err, etcdstore.ErrCorruptValue) {
			t.Fatalf("Current with stored %q = %v, want ErrCorruptValue", bad, err)
		}
		for _, e := range []int64{1, 5, 1 << 62} {
			_, err = s.Advance(timeout(t, 5*time.Second), "bad", e)
			mustBeUnavailable(t, "Advance over "+bad, err, "advance")
			if !errors.Is(err, etcdstore.ErrCorruptValue) {
				t.Fatalf("Advance(%d) over stored %q = %v, want ErrCorruptValue", e, bad, err)
			}
		}
		if got := raw("bad"); got != bad {
			t.Fatalf("corrupt value %q overwritten with %q", bad, got)
		}
	}
}

func TestErrors(t *testing.T) {
	c := testetcd.Start(t, 1)
	cli := c.Client(t)
	s := open(t, c, "/errors/")

	// Validation errors come back as they are, before any round trip.
	if _, err := s.Advance(context.Background(), "", 1); !errors.Is(err, tokens.ErrInvalidResource) {
		t.Errorf("Advance(\"\") = %v", err)
	}
	if _, err := s.Advance(context.Background(), "r", 0); !errors.Is(err, tokens.ErrInvalidEpoch) {
		t.Errorf("Advance(r, 0) = %v", err)
	}
	var u *tokens.UnavailableError
	if _, err := s.Advance(context.Background(), "r", -1); errors.As(err, &u) {
		t.Errorf("Advance(r, -1) = %v: invalid epoch reported as unavailable", err)
	}

	// Context errors are wrapped, and still recognisable.
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Current(cancelled, "r")
	mustBeUnavailable(t, "Current(cancelled)", err, "current")
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), `"r"`) {
		t.Errorf("Current(cancelled) = %v, want it to wrap context.Canceled and name the resource", err)
	}
	_, err = s.Advance(cancelled, "r", 1)
	mustBeUnavailable(t, "Advance(cancelled)", err, "advance")
	mustBeUnavailable(t, "Ping(cancelled)", s.Ping(cancelled), "ping")
	mustCurrent(t, s, "r", 0)

	// Close: idempotent, later calls fail closed, a borrowed client stays open.
	borrowed := etcdstore.New(cli, "/errors/")
	mustAdvance(t, borrowed, "b", 3)
	for range 2 {
		if err := borrowed.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	_, err = borrowed.Current(context.Background(), "b")
	mustBeUnavailable(t, "Current after Close", err, "current")
	if !errors.Is(err, etcdstore.ErrClosed) {
		t.Errorf("Current after Close = %v, want ErrClosed", err)
	}
	_, err = borrowed.Advance(context.Background(), "b", 4)
	mustBeUnavailable(t, "Advance after Close", err, "advance")
	mustBeUnavailable(t, "Ping after Close", borrowed.Ping(context.Background()), "ping")
	if _, err := cli.Get(timeout(t, 5*time.Second), "x"); err != nil {
		t.Errorf("client unusable after closing a Store made by New: %v", err)
	}
	mustCurrent(t, s, "b", 3)
	if s.Exclusive() {
		t.Error("Exclusive() = true")
	}
}

// TestOpenRefuses: options that cannot be used fail Open with a plain
// error naming the field, not as an unavailable store (the whole matrix is
// tokens/internal/etcdclient's test).
func TestOpenRefuses(t *testing.T) {
	for _, o := range []etcdstore.Options{
		{},
		{Endpoints: []string{"a:1", "HTTPS://b:2"}},
		{Endpoints: []string{"a:1"}, Username: "u"},
		{Endpoints: []string{"a:1"}, DialTimeout: -time.Second},
	} {
		s, err := etcdstore.Open(context.Background(), o)
		if err == nil {
			s.Close()
			t.Fatalf("Open(%+v) succeeded", o)
		}
		var u *tokens.UnavailableError
		if errors.As(err, &u) || !strings.HasPrefix(err.Error(), "etcdstore: ") {
			t.Errorf("Open(%+v) = %v, want a plain etcdstore error", o, err)
		}
	}
}

// TestOpenUnreachable: with nothing answering, Open fails as an
// unavailable store (how fast, and over TLS too, is tokens/internal/etcdclient's
// test).
func TestOpenUnreachable(t *testing.T) {
	o := etcdstore.Options{Endpoints: []string{testetcd.Unreachable(t)}, DialTimeout: 500 * time.Millisecond}
	s, err := etcdstore.Open(context.Background(), o)
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded")
	}
	mustBeUnavailable(t, "Open", err, "open")
}
