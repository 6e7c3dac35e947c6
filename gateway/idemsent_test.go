package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/idempotency"
	"github.com/fencegw/fencegw/gateway/problem"
	"github.com/fencegw/fencegw/gateway/upstream"
)

// closedAddr returns a loopback address nothing listens on: a dial to it
// is refused.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// tornAddr returns the address of a listener that reads a little of each
// request it is sent and then resets the connection without answering: the
// upstream received bytes of the write.
func tornAddr(t *testing.T, got *atomic.Int32) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			var b [16]byte
			if n, _ := io.ReadFull(c, b[:]); n > 0 {
				got.Add(1)
			}
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}()
	return l.Addr().String()
}

// firstDialTo returns a transport whose first dial goes to addr instead of
// the upstream.
func firstDialTo(addr string) *upstream.Transport {
	var dials atomic.Int32
	d := &net.Dialer{}
	return upstream.NewTransport(upstream.TransportOptions{DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		if dials.Add(1) == 1 {
			a = addr
		}
		return d.DialContext(ctx, network, a)
	}})
}

// firstOverTLS sends its first request over TLS to a server whose
// certificate the gateway does not trust (the handshake fails), and the
// others to the upstream as they are.
type firstOverTLS struct {
	next *upstream.Transport
	tls  *url.URL
	n    atomic.Int32
}

func (f *firstOverTLS) RoundTrip(req *http.Request) (*http.Response, error) {
	if f.n.Add(1) == 1 {
		req = req.Clone(req.Context())
		req.URL.Scheme, req.URL.Host = "https", f.tls.Host
	}
	return f.next.RoundTrip(req)
}

// TestIdempotencyNothingSentFreesKey: a keyed write whose upstream could
// not be reached — the dial refused, the TLS handshake failed — had no byte
// of it reach the upstream: its key is freed and the retry is forwarded.
// Once a byte may have reached the upstream (it read some of the request
// and reset the connection), the outcome is unknown and the retry is 409.
func TestIdempotencyNothingSentFreesKey(t *testing.T) {
	var tlsHits atomic.Int32
	tlsUp := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tlsHits.Add(1) }))
	defer tlsUp.Close()
	tlsURL, _ := url.Parse(tlsUp.URL)
	for _, tc := range []struct {
		name      string
		transport func(t *testing.T) http.RoundTripper
	}{
		{"connection refused", func(t *testing.T) http.RoundTripper { return firstDialTo(closedAddr(t)) }},
		{"TLS handshake failure", func(t *testing.T) http.RoundTripper {
			return &firstOverTLS{next: upstream.NewTransport(upstream.TransportOptions{}), tls: tlsURL}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t)
			g := newGatewayWith(t, boltFresh(t)(t), up, gatewayOptions{transport: tc.transport(t)}, idemRoutes...)
			if r := keyed(t, g, "/raw/x", "1", "k1", "body"); r.status != http.StatusBadGateway {
				t.Fatalf("write whose upstream could not be reached = %d %s, want 502", r.status, r.body)
			}
			r := keyed(t, g, "/raw/x", "1", "k1", "body")
			if r.status != http.StatusCreated || r.header.Get(idempotency.IdempotentReplayedHeader) != "" {
				t.Fatalf("retry after nothing was sent = %d %s, want 201 forwarded", r.status, r.body)
			}
			if n := up.forwards("k1"); n != 1 {
				t.Fatalf("the upstream got the key %d times, want once", n)
			}
		})
	}
	if n := tlsHits.Load(); n != 0 {
		t.Fatalf("the untrusted TLS server got %d requests", n)
	}
	t.Run("reset after bytes were sent", func(t *testing.T) {
		var torn atomic.Int32
		up := newUpstream(t)
		g := newGatewayWith(t, boltFresh(t)(t), up, gatewayOptions{transport: firstDialTo(tornAddr(t, &torn))}, idemRoutes...)
		if r := keyed(t, g, "/raw/x", "1", "k2", "body"); r.status != http.StatusBadGateway {
			t.Fatalf("write reset by the upstream = %d %s, want 502", r.status, r.body)
		}
		if torn.Load() != 1 {
			t.Fatalf("the resetting upstream read %d requests, want 1", torn.Load())
		}
		r := keyed(t, g, "/raw/x", "1", "k2", "body")
		if p := r.problem(t); r.status != http.StatusConflict || p["type"] != problem.TypeIdemNotReplayable {
			t.Fatalf("retry after a write that reached the upstream in part = %d %v, want 409 not replayable", r.status, p)
		}
		if n := up.forwards("k2"); n != 0 {
			t.Fatalf("forwarded again %d times", n)
		}
	})
}

// TestIdempotencyRecordOutlivesExchange: idempotency.ttl shorter than
// upstream_timeout (which validation refuses, and the gateway must survive
// anyway) does not end a write's in-flight record while the write may still
// be at the upstream: a retry then is 409 in flight, never forwarded again.
func TestIdempotencyRecordOutlivesExchange(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			up := newUpstream(t)
			up.delay = 2500 * time.Millisecond
			g := newGatewayWith(t, b.fresh(t)(t), up, gatewayOptions{upstreamTimeout: 5 * time.Second, idemTTL: time.Second}, idemRoutes...)
			slow := make(chan answer, 1)
			go func() { slow <- keyed(t, g, "/raw/x", "1", "long", "body") }()
			deadline := time.Now().Add(10 * time.Second)
			for up.forwards("long") == 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(1500 * time.Millisecond) // past idempotency.ttl
			r := keyed(t, g, "/raw/x", "1", "long", "body")
			if r.status != http.StatusConflict || r.problem(t)["type"] != problem.TypeIdemInFlight {
				t.Fatalf("retry past idempotency.ttl while the write is at the upstream = %d %s, want 409 in flight", r.status, r.body)
			}
			if first := <-slow; first.status != http.StatusCreated {
				t.Fatalf("the slow write = %d %s", first.status, first.body)
			}
			if r := keyed(t, g, "/raw/x", "1", "long", "body"); r.status != http.StatusCreated || r.header.Get(idempotency.IdempotentReplayedHeader) != "true" {
				t.Fatalf("retry after the answer = %d %s, want the answer replayed", r.status, r.body)
			}
			if n := up.forwards("long"); n != 1 {
				t.Fatalf("the upstream got the write %d times, want once", n)
			}
		})
	}
}
