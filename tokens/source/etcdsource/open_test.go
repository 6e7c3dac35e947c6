package etcdsource_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/tokens/source"
	"github.com/fencegw/fencegw/tokens/source/etcdsource"
	"github.com/fencegw/fencegw/tokens/source/sourcetest"
)

// TestOpenInvalid: options that cannot be used fail Open at once, naming
// the field (the whole matrix is tokens/internal/etcdclient's test).
func TestOpenInvalid(t *testing.T) {
	s, err := etcdsource.Open(sourcetest.Context(t, 10*time.Second), etcdsource.Options{Endpoints: []string{"a:2379"}, DialTimeout: -time.Second})
	if err == nil {
		s.Close()
		t.Fatal("Open with a negative DialTimeout succeeded")
	}
	if !strings.Contains(err.Error(), "etcdsource: DialTimeout") {
		t.Fatalf("Open error %q does not name the field", err)
	}
}

// TestOpen: Open connects and owns its client; closing a view closes the
// Source and every other view.
func TestOpen(t *testing.T) {
	c := testetcd.Start(t, 1)
	s, err := etcdsource.Open(sourcetest.Context(t, 10*time.Second), etcdsource.Options{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	view := s.ForPrefix(prefix)
	sourcetest.MustLeader(t, view, "", source.Leader{})
	if err := view.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, src := range []source.Source{s, view, s.ForPrefix("/other")} {
		if _, err := src.Current(sourcetest.Context(t, 10*time.Second), prefix); !errors.Is(err, source.ErrClosed) {
			t.Fatalf("Current after Close = %v, want source.ErrClosed", err)
		}
	}
}

// TestNewKeepsClient: Close of a Source from New leaves the caller's
// client open.
func TestNewKeepsClient(t *testing.T) {
	c := testetcd.Start(t, 1)
	cli := c.Client(t)
	s := etcdsource.New(cli)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := s.Current(sourcetest.Context(t, 10*time.Second), prefix); !errors.Is(err, source.ErrClosed) {
		t.Fatalf("Current after Close = %v, want source.ErrClosed", err)
	}
	if _, err := cli.Get(sourcetest.Context(t, 10*time.Second), "k"); err != nil {
		t.Fatalf("client unusable after Close: %v", err)
	}
}

// TestQuorumLost: with two of three members down, reads are refused rather
// than served from the surviving member's possibly stale state.
func TestQuorumLost(t *testing.T) {
	c := testetcd.Start(t, 3)
	view := etcdsource.New(c.Client(t)).ForPrefix(prefix)
	sourcetest.MustLeader(t, view, "", source.Leader{})
	c.StopMember(0)
	c.StopMember(1)
	for i := range 3 {
		l, err := view.Current(sourcetest.Context(t, time.Second), "")
		if err == nil {
			t.Fatalf("Current #%d without quorum = %+v, want an error", i+1, l)
		}
		sourcetest.MustUnavailable(t, "Current without quorum", err)
	}
}
