package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/control"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/server"
	"github.com/fencegw/fencegw/telemetry"
	"github.com/fencegw/fencegw/tokens"
)

// TestCustomMethods: a configured fenced method and an unknown unfenced
// method both reach the upstream; nothing answers 405 on the gateway's own.
func TestCustomMethods(t *testing.T) {
	up := newUpstream(t)
	g := newGateway(t, boltFresh(t)(t), up, nil,
		routeSpec{prefix: "/email/", resource: "invoice-sweeper", methods: []string{"POST", "PURGE"}})
	if a := do(t, "PURGE", g.proxy.URL+"/email/x", map[string]string{gateway.TokenHeader: "9"}, ""); a.status != http.StatusCreated {
		t.Fatalf("fenced PURGE = %d %s", a.status, a.body)
	}
	if a := do(t, "PURGE", g.proxy.URL+"/email/x", nil, ""); a.status != http.StatusPreconditionRequired {
		t.Fatalf("tokenless PURGE = %d", a.status)
	}
	if a := do(t, "PROPFIND", g.proxy.URL+"/email/x", nil, ""); a.status != http.StatusCreated {
		t.Fatalf("unfenced PROPFIND = %d %s", a.status, a.body)
	}
	if a := do(t, "DELETE", g.proxy.URL+"/email/x", nil, ""); a.status != http.StatusCreated {
		t.Fatalf("DELETE, not fenced on this route = %d", a.status)
	}
}

// TestClientFencingHeadersNeverReachUpstream: whatever fencing headers a
// client sends, in any spelling, the upstream sees only the gateway's.
func TestClientFencingHeadersNeverReachUpstream(t *testing.T) {
	up := newUpstream(t)
	g := newGateway(t, boltFresh(t)(t), up, nil)
	forged := map[string]string{"Fencing_Epoch": "999", "fencing-epoch": "998", "Fencing_Resource": "other", "Fencing_Token": "5"}
	do(t, "GET", g.proxy.URL+"/email/x", forged, "")
	forged[gateway.TokenHeader] = "3"
	do(t, "POST", g.proxy.URL+"/email/x", forged, "")
	got := up.requests()
	if len(got) != 2 {
		t.Fatalf("upstream got %d requests", len(got))
	}
	for i, r := range got {
		for name, v := range r.Header {
			if strings.HasPrefix(strings.ToLower(strings.ReplaceAll(name, "_", "-")), "fencing-") {
				if i == 1 && (name == gateway.EpochHeader && v[0] == "3" || name == gateway.ResourceHeader && v[0] == "invoice-sweeper") {
					continue
				}
				t.Errorf("request %d reached the upstream with %s: %v", i, name, v)
			}
		}
	}
}

// TestFenceNameDecodedOnce reads fences whose names hold '%' and '/'.
func TestFenceNameDecodedOnce(t *testing.T) {
	g := newGateway(t, boltFresh(t)(t), newUpstream(t), nil)
	for name, epoch := range map[string]string{"a%41": "7", "aA": "3", "100%": "4", "x/y": "5"} {
		a := do(t, "POST", g.proxy.URL+"/any/x", map[string]string{gateway.TokenHeader: epoch, gateway.ResourceHeader: name}, "")
		if a.status != http.StatusCreated {
			t.Fatalf("write %q = %d", name, a.status)
		}
	}
	for path, want := range map[string]string{"a%2541": `"resource":"a%41","epoch":"7"`, "aA": `"epoch":"3"`,
		"100%25": `"resource":"100%","epoch":"4"`, "x%2Fy": `"resource":"x/y","epoch":"5"`} {
		a := do(t, "GET", g.api.URL+"/v1/fences/"+path, nil, "")
		if a.status != http.StatusOK || !strings.Contains(string(a.body), want) {
			t.Errorf("GET /v1/fences/%s = %d %s, want %s", path, a.status, a.body, want)
		}
	}
}

// TestTricklingBodyIsCut: an admitted write whose body does not arrive
// within the upstream timeout is cut off and never delivered, so it cannot
// land after a higher epoch was admitted.
func TestTricklingBodyIsCut(t *testing.T) {
	up := newUpstream(t)
	store := boltFresh(t)(t)
	g := newGatewayWith(t, store, up, gatewayOptions{upstreamTimeout: 500 * time.Millisecond})
	conn, err := net.Dial("tcp", strings.TrimPrefix(g.proxy.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /email/send HTTP/1.1\r\nHost: gw\r\n%s: 20\r\nContent-Length: 10\r\n\r\nab", gateway.TokenHeader)
	time.Sleep(100 * time.Millisecond)
	if a := g.write(t, "/email/send", "21"); a.status != http.StatusCreated {
		t.Fatalf("epoch 21 = %d", a.status)
	}
	// Keep trickling past the timeout.
	for i := 0; i < 8; i++ {
		time.Sleep(200 * time.Millisecond)
		if _, err := conn.Write([]byte("x")); err != nil {
			break
		}
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusCreated {
			t.Fatalf("the trickled write at epoch 20 was delivered after epoch 21")
		}
	}
	for _, r := range up.requests() {
		if r.Header.Get(gateway.EpochHeader) == "20" {
			body, _ := io.ReadAll(r.Body)
			if len(body) == 10 {
				t.Fatal("the upstream received the whole trickled write at epoch 20")
			}
		}
	}
}

// TestAPIKeys: with keys, lease calls need a key allowed for the lease and
// fence reads an admin key; health, readiness and JWKS stay open.
func TestAPIKeys(t *testing.T) {
	key := func(name, secret string, admin bool, leases ...string) control.APIKey {
		return control.APIKey{Name: name, Hash: sha256.Sum256([]byte(secret)), Leases: leases, Admin: admin}
	}
	g := newGatewayWith(t, boltFresh(t)(t), newUpstream(t), gatewayOptions{keys: control.APIKeys{
		key("sweeper", "s3cret-sweeper", false, "invoice-*"),
		key("ops", "s3cret-ops", true),
	}})
	bearer := func(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }
	body := `{"holder":"a","ttl_seconds":5}`
	for _, c := range []struct {
		method, path, body string
		header             map[string]string
		status             int
	}{
		{"POST", "/v1/leases/invoice-sweeper/acquire", body, nil, 401},
		{"POST", "/v1/leases/invoice-sweeper/acquire", body, bearer("wrong"), 401},
		{"POST", "/v1/leases/report/acquire", body, bearer("s3cret-sweeper"), 403},
		{"POST", "/v1/leases/invoice-sweeper/acquire", body, bearer("s3cret-sweeper"), 200},
		{"GET", "/v1/leases/invoice-sweeper", "", bearer("s3cret-sweeper"), 200},
		{"GET", "/v1/fences/invoice-sweeper", "", bearer("s3cret-sweeper"), 403},
		{"GET", "/v1/fences/invoice-sweeper", "", bearer("s3cret-ops"), 200},
		{"POST", "/v1/leases/report/acquire", body, bearer("s3cret-ops"), 200},
		{"GET", "/healthz", "", nil, 200},
		{"GET", "/readyz", "", nil, 200},
		{"GET", "/.well-known/jwks.json", "", nil, 200},
	} {
		a := do(t, c.method, g.api.URL+c.path, c.header, c.body)
		if a.status != c.status {
			t.Errorf("%s %s with %v = %d %s, want %d", c.method, c.path, c.header, a.status, a.body, c.status)
		}
		if a.status == 401 && a.header.Get("WWW-Authenticate") == "" {
			t.Errorf("401 without WWW-Authenticate")
		}
	}
}

// failingStore is a store whose every HWM call fails to reach it.
type failingStore struct{ tokens.Store }

func (failingStore) Current(context.Context, string) (int64, error) {
	return 0, &tokens.UnavailableError{Op: "current", Err: errors.New("dial tcp 10.0.0.9:5432: connection refused")}
}

func (failingStore) Advance(context.Context, string, int64) (int64, error) {
	return 0, &tokens.UnavailableError{Op: "advance", Err: errors.New("dial tcp 10.0.0.9:5432: connection refused")}
}

func (failingStore) Exclusive() bool { return false }

// TestUnavailableLogsItsCause: a 503 is logged with the failure behind it,
// which the client never sees.
func TestUnavailableLogsItsCause(t *testing.T) {
	up := newUpstream(t)
	var logs bytes.Buffer
	c := embeddedConfig(t)
	c.Routes = []config.Route{{Prefix: "/w/", Upstream: up.srv.URL, Tokens: config.TokensRaw}}
	h := assemble(t, c, server.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		Store: failingStore{boltFresh(t)(t)}}).Proxy()
	srv := httptest.NewServer(h)
	defer srv.Close()
	a := do(t, "POST", srv.URL+"/w/x", map[string]string{gateway.TokenHeader: "3", gateway.ResourceHeader: "r"}, "x")
	if a.status != http.StatusServiceUnavailable || strings.Contains(string(a.body), "10.0.0.9") {
		t.Fatalf("= %d %s, want 503 without the cause", a.status, a.body)
	}
	if !strings.Contains(logs.String(), `"error":"advance HWM: store unavailable: advance: dial tcp 10.0.0.9:5432: connection refused"`) {
		t.Fatalf("the 503's log line does not carry its cause:\n%s", logs.String())
	}
	if len(up.requests()) != 0 {
		t.Fatal("an unconfirmed write reached the upstream")
	}
}

// TestReservedHeadersAreTheOnesTheProxyChanges sends one unfenced request
// carrying every header a proxy, an HTTP server or the gateway's telemetry
// might act on, through the gateway as fencegw serve runs it (guarded,
// W3C trace propagation on), and compares what the upstream receives. Every
// header that does not arrive exactly as sent must be one that a resource
// template refuses (tokens.ReservedHeader): a fence reading it would read
// the client's value while the upstream receives another. Framing and host
// fields, which cannot be sent freely here, are reserved statically
// (policy's TestTemplateRefusesHeadersTheProxyRewrites).
func TestReservedHeadersAreTheOnesTheProxyChanges(t *testing.T) {
	up := newUpstream(t)
	tel, err := telemetry.Setup(context.Background(), telemetry.Options{IgnoreEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Shutdown(context.Background()) })
	c := embeddedConfig(t)
	c.Routes = []config.Route{{Prefix: "/", Upstream: up.srv.URL, Tokens: config.TokensRaw}}
	s := assemble(t, c, server.Options{Telemetry: tel})
	ls := server.Listeners{Proxy: listenLoopback(t), Control: listenLoopback(t)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ls, nil) }()
	t.Cleanup(func() { cancel(); <-done })

	sent := [][2]string{
		{"Connection", "keep-alive"}, {"Proxy-Connection", "keep-alive"}, {"Keep-Alive", "timeout=5"},
		{"Proxy-Authorization", "Basic eDp5"}, {"Proxy-Authenticate", "Basic"}, {"Te", "deflate"},
		{"Trailer", "X-Later"}, {"Upgrade", "foo/1"},
		{"Forwarded", "for=192.0.2.1;host=evil;proto=https"}, {"X-Forwarded-For", "192.0.2.1"},
		{"X-Forwarded-Host", "evil.example"}, {"X-Forwarded-Proto", "gopher"},
		{"Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}, {"Tracestate", "vendor=opaque ,  other=x"},
		{"Baggage", "tenant = 7"},
		{"Fencing-Token", "5"}, {"Fencing-Epoch", "999"}, {"Fencing-Resource", "other"}, {"Fencing_Epoch", "998"},
		{"X-Real-Ip", "192.0.2.9"}, {"X-Forwarded-Port", "1"}, {"X-Original-Url", "/admin"}, {"X_Forwarded_Host", "evil"},
		// Headers no one along the way touches: they must arrive as sent.
		{"X-Tenant", "7"}, {"X_Tenant", "8"}, {"User-Agent", "probe/1"}, {"Accept-Encoding", "br"},
		{"Cookie", "a=1; b=2"}, {"Via", "1.1 elsewhere"},
		{"Authorization", "Bearer x"}, {"Accept", "*/*"}, {"Content-Type", "text/plain"},
	}
	var b strings.Builder
	b.WriteString("GET /probe HTTP/1.1\r\nHost: gw\r\n")
	for _, kv := range sent {
		fmt.Fprintf(&b, "%s: %s\r\n", kv[0], kv[1])
	}
	b.WriteString("\r\n")
	conn, err := net.Dial("tcp", ls.Proxy.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(conn, b.String())
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := up.requests()
	if resp.StatusCode != http.StatusCreated || len(got) != 1 {
		t.Fatalf("status %d, %d requests upstream", resp.StatusCode, len(got))
	}
	changed := 0
	for _, kv := range sent {
		var vals []string // header names are case-insensitive
		for name, v := range got[0].Header {
			if strings.EqualFold(name, kv[0]) {
				vals = append(vals, v...)
			}
		}
		if len(vals) == 1 && vals[0] == kv[1] {
			continue
		}
		changed++
		if tokens.ReservedHeader(kv[0]) == "" {
			t.Errorf("%s: sent %q, the upstream received %q, yet a template may name a resource by it", kv[0], kv[1], vals)
		}
	}
	if changed < 15 {
		t.Fatalf("only %d headers changed on the way: the probe no longer exercises the proxy", changed)
	}
}

// TestUnfencedRoutingHeadersAreStripped: headers through which an upstream
// (or a server in front of it) may pick another path, client address,
// port or prefix than the fence saw never reach the upstream as the client
// sent them, in any spelling; X-Forwarded-Host carries the client's Host.
func TestUnfencedRoutingHeadersAreStripped(t *testing.T) {
	up := newUpstream(t)
	g := newGateway(t, boltFresh(t)(t), up, nil)
	sent := map[string]string{
		"X-Original-URL": "/admin/delete", "X-Rewrite-URL": "/admin/delete", "X-Real-IP": "127.0.0.1",
		"X-Forwarded-Port": "8443", "X-Forwarded-Prefix": "/admin",
		"X_Original_URL": "/admin/x", "x_real_ip": "10.0.0.1", "X_Forwarded_Prefix": "/admin",
		"X_Forwarded_For": "10.0.0.2", "X_Forwarded_Host": "evil.example", "X_Forwarded_Proto": "https",
		"X-Original-URI": "/admin", "X-Forwarded-Uri": "/admin", "X-Forwarded-Path": "/admin",
		"X-Envoy-Original-Path": "/admin", "X-MS-Original-URL": "/admin", "X-Original-Host": "evil.example",
		"X-Host": "evil.example", "X-Forwarded-Server": "evil.example", "X-HTTP-Host-Override": "evil.example",
		"True-Client-IP": "10.0.0.3", "X-Client-IP": "10.0.0.3", "CF-Connecting-IP": "10.0.0.3",
		"X-Cluster-Client-IP": "10.0.0.3", "X-Forwarded-Ssl": "on", "Front-End-Https": "on", "X-Url-Scheme": "https",
		"X-Forwarded-Scheme": "https", "X-Original-Method": "DELETE", "Forwarded_For": "10.0.0.4",
		"Idempotency_Key": "k-twin", "Fencing_Token": "99", "Fencing_Epoch": "99", "Fencing_Resource": "other",
	}
	for _, method := range []string{"GET", "POST"} {
		h := map[string]string{gateway.TokenHeader: "3"}
		for k, v := range sent {
			h[k] = v
		}
		req, err := http.NewRequest(method, g.proxy.URL+"/email/x", nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range h {
			req.Header[k] = []string{v} // as spelled, not canonicalized
		}
		req.Host = "client.example"
		if a := send(t, req); a.status != http.StatusCreated {
			t.Fatalf("%s = %d %s", method, a.status, a.body)
		}
	}
	got := up.requests()
	if len(got) != 2 {
		t.Fatalf("upstream got %d requests", len(got))
	}
	stripped := append(slices.Clone(tokens.StrippedHeaders), "forwarded-for")
	for i, r := range got {
		for name, v := range r.Header {
			key := tokens.HeaderKey(name)
			if slices.Contains(stripped, key) || strings.Contains(name, "_") {
				t.Errorf("request %d reached the upstream with %s: %v", i, name, v)
			}
			if strings.HasPrefix(key, "x-forwarded-") && strings.Contains(name, "_") {
				t.Errorf("request %d reached the upstream with %s: %v, beside the gateway's own", i, name, v)
			}
		}
		if h := r.Header.Get("X-Forwarded-Host"); h != "client.example" {
			t.Errorf("request %d: X-Forwarded-Host = %q, want the client's Host", i, h)
		}
	}
}
