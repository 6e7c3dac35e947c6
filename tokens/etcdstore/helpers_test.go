package etcdstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/etcdstore"
)

// timeout returns a context that ends after d or with the test.
func timeout(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}

// open opens a Store over c's endpoints with its own client, closed at the
// end of t.
func open(t testing.TB, c *testetcd.Cluster, prefix string) *etcdstore.Store {
	t.Helper()
	s, err := etcdstore.Open(timeout(t, 10*time.Second), etcdstore.Options{Endpoints: c.Endpoints(), Prefix: prefix})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func mustAdvance(t *testing.T, s tokens.Store, res string, epoch int64) {
	t.Helper()
	got, err := s.Advance(timeout(t, 10*time.Second), res, epoch)
	if err != nil || got != epoch {
		t.Fatalf("Advance(%q, %d) = %d, %v; want %d, nil", res, epoch, got, err, epoch)
	}
}

func mustCurrent(t *testing.T, s tokens.Store, res string, want int64) {
	t.Helper()
	got, err := s.Current(timeout(t, 10*time.Second), res)
	if err != nil || got != want {
		t.Fatalf("Current(%q) = %d, %v; want %d, nil", res, got, err, want)
	}
}

func mustBeStale(t *testing.T, s tokens.Store, res string, epoch, current int64) {
	t.Helper()
	_, err := s.Advance(timeout(t, 10*time.Second), res, epoch)
	var stale *tokens.StaleEpochError
	if !errors.As(err, &stale) || stale.Current != current || stale.Presented != epoch || stale.Resource != res {
		t.Fatalf("Advance(%q, %d) = %v, want stale with current %d", res, epoch, err, current)
	}
}

// mustBeUnavailable fails t unless err is a *tokens.UnavailableError for op,
// and nothing else the store contract distinguishes.
func mustBeUnavailable(t *testing.T, what string, err error, op string) {
	t.Helper()
	var u *tokens.UnavailableError
	if !errors.As(err, &u) {
		t.Fatalf("%s = %v (%T), want *tokens.UnavailableError", what, err, err)
	}
	if u.Op != op {
		t.Errorf("%s: Op = %q, want %q", what, u.Op, op)
	}
	var stale *tokens.StaleEpochError
	if errors.As(err, &stale) || errors.Is(err, tokens.ErrInvalidEpoch) || errors.Is(err, tokens.ErrInvalidResource) || errors.Is(err, tokens.ErrMalformedToken) {
		t.Errorf("%s = %v: also matches a non-availability error", what, err)
	}
}
