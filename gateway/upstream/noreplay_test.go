package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/reqctx"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// TestStdTransportNeverResendsAWrite: net/http's Transport resends a
// body-less request it deems replayable (a keyed write, a read) when its
// reused connection is closed before an answer — after the upstream took
// it whole. Through the gateway's TLS path a keyed write and a leased read
// reach the upstream once, the exchange fails (502 upstream of here), and
// the key header still reaches the upstream.
func TestStdTransportNeverResendsAWrite(t *testing.T) {
	var (
		mu       sync.Mutex
		arrivals = map[string]int{}
		keys     = map[string]string{}
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrivals[r.Method+" "+r.URL.Path]++
		keys[r.URL.Path] = r.Header.Get("Idempotency-Key")
		mu.Unlock()
		if r.URL.Path == "/warm" {
			return
		}
		// Took it whole; close the reused connection with no answer.
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			c.Close()
		}
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())

	cases := []struct {
		name, method string
		key          string
		leased       bool
	}{
		{"keyed DELETE", http.MethodDelete, "k-1", false},
		{"keyed POST with no body", http.MethodPost, "k-2", false},
		{"leased keyed DELETE", http.MethodDelete, "k-3", true},
		{"leased GET", http.MethodGet, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := NewTransport(TransportOptions{TLS: &tls.Config{RootCAs: roots}})
			t.Cleanup(tr.CloseIdleConnections)
			ctx := context.Background()
			if c.leased { // leased writes have a pool of their own
				ctx = leasedContext(time.Now().Add(time.Minute))
			}
			warm := newRequest(t, ctx, http.MethodGet, srv.URL+"/warm", "")
			if resp, err := tr.RoundTrip(warm); err != nil {
				t.Fatalf("warm-up: %v", err)
			} else {
				resp.Body.Close()
			}
			path := "/" + t.Name()
			req := newRequest(t, ctx, c.method, srv.URL+path, c.key)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("the exchange succeeded (%s): the upstream never answered it", resp.Status)
			}
			mu.Lock()
			defer mu.Unlock()
			if n := arrivals[c.method+" "+path]; n != 1 {
				t.Errorf("the upstream received the write %d times, want once", n)
			}
			if keys[path] != c.key {
				t.Errorf("the upstream saw Idempotency-Key %q, want %q", keys[path], c.key)
			}
		})
	}
}

// newRequest is a body-less request, with key as its Idempotency-Key when
// set.
func newRequest(t *testing.T, ctx context.Context, method, url, key string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	return req
}

// leasedContext is the context of a request admitted on a lease whose
// write must be delivered by by.
func leasedContext(by time.Time) context.Context {
	ctx := reqctx.WithRoute(context.Background(), &policy.Route{Name: "/w/", Prefix: "/w/"})
	reqctx.Admit(ctx, tokens.Admission{DeliverBy: by})
	return ctx
}
