package gateway_test

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/testutil/testtls"
)

// TestGuardedTLS: over TLS, HTTP/1.1 framing attacks are refused and reach
// nothing, HTTP/1.1 writes are forwarded as https, and HTTP/2 still works.
func TestGuardedTLS(t *testing.T) {
	tc, pool := testtls.SelfSigned(t)
	up := newRawUpstream(t)
	addr := guardedGateway(t, up, tc)
	dial := func() (net.Conn, error) {
		return tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}})
	}
	for _, a := range framingAttacks {
		checkRefused(t, exchange(t, dial, a.pieces...), a.status, a.typ)
	}
	if whole, n := up.received(); n != 0 {
		t.Fatalf("the upstream received %d bytes (%q)", n, whole)
	}
	for _, h2 := range []bool{false, true} {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: h2}
		if !h2 {
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		}
		req, _ := http.NewRequest("POST", "https://"+addr+"/email/send", strings.NewReader("x"))
		req.Header.Set(gateway.TokenHeader, "5")
		req.Header.Set(gateway.ResourceHeader, "r")
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("h2 %v: %v", h2, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		tr.CloseIdleConnections()
		if want := map[bool]int{false: 1, true: 2}[h2]; resp.StatusCode != http.StatusCreated || resp.ProtoMajor != want {
			t.Fatalf("h2 %v: %d over HTTP/%d, want 201 over HTTP/%d", h2, resp.StatusCode, resp.ProtoMajor, want)
		}
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if strings.Join(up.proto, ",") != "https,https" {
		t.Fatalf("X-Forwarded-Proto %q, want https for both", up.proto)
	}
}
