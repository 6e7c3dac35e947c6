package etcdsource_test

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testetcd"
	"github.com/fencegw/fencegw/tokens/source"
	"github.com/fencegw/fencegw/tokens/source/etcdsource"
)

// TestOpen: Open connects and owns its client; Close ends every view.
func TestOpen(t *testing.T) {
	c := testetcd.Start(t, 1)
	s, err := etcdsource.Open(ctx(t, 10*time.Second), etcdsource.Options{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	view := s.ForPrefix(prefix)
	mustLeader(t, view, "", source.Leader{})
	if err := view.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, src := range []source.Source{s, view} {
		if _, err := src.Current(ctx(t, 10*time.Second), prefix); !errors.Is(err, source.ErrClosed) {
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
	if _, err := s.Current(ctx(t, 10*time.Second), prefix); !errors.Is(err, source.ErrClosed) {
		t.Fatalf("Current after Close = %v, want source.ErrClosed", err)
	}
	if _, err := cli.Get(ctx(t, 10*time.Second), "k"); err != nil {
		t.Fatalf("client unusable after Close: %v", err)
	}
}

func TestOpenInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    etcdsource.Options
		want string
	}{
		{"no endpoints", etcdsource.Options{}, "Endpoints"},
		{"empty endpoint", etcdsource.Options{Endpoints: []string{"127.0.0.1:2379", ""}}, "Endpoints"},
		{"mixed TLS", etcdsource.Options{Endpoints: []string{"https://a:2379", "http://b:2379"}}, "mix https"},
		{"user without password", etcdsource.Options{Endpoints: []string{"a:2379"}, Username: "u"}, "Username and Password"},
		{"password without user", etcdsource.Options{Endpoints: []string{"a:2379"}, Password: "p"}, "Username and Password"},
		{"negative timeout", etcdsource.Options{Endpoints: []string{"a:2379"}, DialTimeout: -time.Second}, "DialTimeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := etcdsource.Open(ctx(t, 10*time.Second), tc.o)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// TestOpenUnreachable: Open fails within DialTimeout when nothing answers.
func TestOpenUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	start := time.Now()
	s, err := etcdsource.Open(ctx(t, 10*time.Second), etcdsource.Options{Endpoints: []string{addr}, DialTimeout: 500 * time.Millisecond})
	if err == nil {
		s.Close()
		t.Fatal("Open with nothing listening succeeded")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Open took %v with a 500ms DialTimeout", took)
	}
	if !strings.Contains(err.Error(), addr) {
		t.Fatalf("Open error %q does not name the endpoint", err)
	}
}

// TestClusterDown: with the cluster stopped, Current fails within its
// context (the caller fails closed), and works again after a restart.
func TestClusterDown(t *testing.T) {
	c := testetcd.Start(t, 1)
	cli := c.Client(t)
	view := etcdsource.New(cli).ForPrefix(prefix)
	mustLeader(t, view, "", source.Leader{})

	c.Stop()
	start := time.Now()
	l, err := view.Current(ctx(t, time.Second), "")
	if err == nil {
		t.Fatalf("Current with the cluster down = %+v, want an error", l)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Current took %v with a 1s context", took)
	}
	t.Logf("Current while down: %v", err)

	c.Restart()
	mustLeader(t, view, "", source.Leader{})
}

// TestQuorumLost: with two of three members down, reads are refused rather
// than served from the surviving member's possibly stale state.
func TestQuorumLost(t *testing.T) {
	c := testetcd.Start(t, 3)
	cli := c.Client(t)
	view := etcdsource.New(cli).ForPrefix(prefix)
	mustLeader(t, view, "", source.Leader{})
	c.StopMember(0)
	c.StopMember(1)
	for i := range 3 {
		if l, err := view.Current(ctx(t, time.Second), ""); err == nil {
			t.Fatalf("Current #%d without quorum = %+v, want an error", i+1, l)
		} else {
			t.Logf("Current #%d without quorum: %v", i+1, fmt.Sprint(err))
		}
	}
}
