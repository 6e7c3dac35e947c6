package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/wire"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/server"
)

// cannedUpstream answers every request 202 without a network: the
// benchmarks below measure the gateway's own work per request.
type cannedUpstream struct{}

func (cannedUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusAccepted, ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Length": {"0"}}, Body: http.NoBody, ContentLength: 0, Request: r}, nil
}

// BenchmarkHandler measures the proxy handler alone (no sockets, a canned
// upstream) on the embedded store: admitting raw and signed writes at the
// current epoch, and refusing stale ones. Allocations per request are the
// figure to watch.
//
//	go test -run '^$' -bench BenchmarkHandler -benchmem ./gateway
func BenchmarkHandler(b *testing.B) {
	c := embeddedConfig(b)
	c.Routes = []config.Route{
		{Prefix: "/raw/", Upstream: "http://upstream.invalid", Tokens: config.TokensRaw, Resource: "bench-raw"},
		{Prefix: "/signed/", Upstream: "http://upstream.invalid", Tokens: config.TokensSigned, Resource: "bench-signed"},
	}
	c.Signing.TokenLifetime = config.Duration(time.Hour)
	s := assemble(b, c, server.Options{Transport: cannedUpstream{}})
	h := s.Proxy()
	token := acquireToken(b, s, "bench-signed")
	one := func(b *testing.B, path, tok string, want int) {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{"to":"a@example.com","invoice":1000123}`))
		req.Header.Set(gateway.TokenHeader, tok)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			b.Fatalf("%s: %d %s, want %d", path, rec.Code, rec.Body, want)
		}
	}
	send := func(b *testing.B, path, tok string, want int) {
		b.ReportAllocs()
		for b.Loop() {
			one(b, path, tok, want)
		}
	}
	one(b, "/raw/x", "5", http.StatusAccepted) // the raw route's HWM
	b.Run("admit-raw", func(b *testing.B) { send(b, "/raw/x", "5", http.StatusAccepted) })
	b.Run("admit-signed", func(b *testing.B) { send(b, "/signed/x", token, http.StatusAccepted) })
	b.Run("refuse-stale", func(b *testing.B) { send(b, "/raw/x", "4", http.StatusPreconditionFailed) })
}

// acquireToken acquires lease name through s's control API for an hour
// and returns its token.
func acquireToken(tb testing.TB, s *server.Server, name string) string {
	tb.Helper()
	req := httptest.NewRequest(http.MethodPost, "/v1/leases/"+name+"/acquire",
		strings.NewReader(`{"holder":"bench","ttl_seconds":3600}`))
	rec := httptest.NewRecorder()
	s.Control().ServeHTTP(rec, req)
	var l wire.LeaseState
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &l) != nil || l.Token == "" {
		tb.Fatalf("acquire %s: %d %s", name, rec.Code, rec.Body)
	}
	return l.Token
}
