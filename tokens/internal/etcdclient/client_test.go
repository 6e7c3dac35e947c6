package etcdclient_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/internal/testutil/testleak"
	"github.com/fencegw/fencegw/tokens/internal/etcdclient"
)

// TestMain fails the tests if a client or embedded member outlives them. A
// stopped member may take rafthttp's 5 s read timeout to let go.
func TestMain(m *testing.M) { testleak.Exit(m.Run(), 10*time.Second) }

func TestOpenRefusesOptions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		o     etcdclient.Options
		field string
		want  string
	}{
		{"no endpoints", etcdclient.Options{}, "Endpoints", "none given"},
		{"empty endpoint", etcdclient.Options{Endpoints: []string{"127.0.0.1:2379", ""}}, "Endpoints", "empty endpoint"},
		{"mixed TLS", etcdclient.Options{Endpoints: []string{"https://a:2379", "http://b:2379"}}, "Endpoints", "mix https and plaintext"},
		{"mixed TLS, any case", etcdclient.Options{Endpoints: []string{"a:1", "HTTPS://b:2"}}, "Endpoints", "mix https and plaintext"},
		{"user without password", etcdclient.Options{Endpoints: []string{"a:2379"}, Username: "u"}, "Username", "Username and Password"},
		{"password without user", etcdclient.Options{Endpoints: []string{"a:2379"}, Password: "p"}, "Username", "Username and Password"},
		{"negative timeout", etcdclient.Options{Endpoints: []string{"a:2379"}, DialTimeout: -time.Second}, "DialTimeout", "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, err := range []error{tc.o.Validate(), open(tc.o)} {
				var oe *etcdclient.OptionError
				if !errors.As(err, &oe) || oe.Field != tc.field || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want a *OptionError for %s mentioning %q", err, tc.field, tc.want)
				}
			}
		})
	}
}

// open opens a client with o, closing it at once when Open succeeds.
func open(o etcdclient.Options) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := etcdclient.Open(ctx, o, "probe")
	if err == nil {
		cli.Close()
	}
	return err
}

func TestOpen(t *testing.T) {
	c := testetcd.Start(t, 1)
	if err := (etcdclient.Options{Endpoints: c.Endpoints()}).Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := etcdclient.Open(ctx, etcdclient.Options{Endpoints: c.Endpoints()}, "probe")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer cli.Close() // again, harmless; the test closes it through a Handle
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatalf("Put: %v", err)
	}

	// A borrowed client outlives its Handle; an owned one does not.
	for _, h := range []*etcdclient.Handle{etcdclient.Borrowed(cli), etcdclient.Owned(cli)} {
		if h.Closed() {
			t.Fatal("a new Handle is closed")
		}
		for range 2 {
			if err := h.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		}
		if !h.Closed() {
			t.Fatal("Closed() = false after Close")
		}
	}
	if _, err := cli.Put(ctx, "k", "v"); err == nil {
		t.Fatal("the client still works after its owning Handle closed")
	}
}

// TestOpenUnreachable: with nothing answering, Open fails within
// DialTimeout, in plaintext and over TLS (a plaintext member cannot complete
// a TLS handshake), naming the endpoint.
func TestOpenUnreachable(t *testing.T) {
	c := testetcd.Start(t, 1)
	for _, ep := range []string{testetcd.Unreachable(t), "https://" + strings.TrimPrefix(c.Endpoints()[0], "http://")} {
		o := etcdclient.Options{Endpoints: []string{ep}, DialTimeout: 500 * time.Millisecond}
		start := time.Now()
		err := open(o)
		if err == nil {
			t.Fatalf("Open(%s) succeeded", ep)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("Open(%s) took %v with DialTimeout %v", ep, took, o.DialTimeout)
		}
		var oe *etcdclient.OptionError
		if errors.As(err, &oe) || !strings.Contains(err.Error(), ep) {
			t.Errorf("Open(%s) = %v, want an error naming the endpoint, not the options", ep, err)
		}
	}
}
