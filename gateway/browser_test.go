package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/gateway/control"
	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/fencegw/fencegw/config"
)

// TestControlRefusesCrossSite: without api_keys, what a web page can make a
// browser send never changes state: a form's text/plain body is 415, a
// page of another origin 403, a name rebound to the control API 421; the
// page's own origin, curl and the Go clients (JSON, no Origin) go through.
func TestControlRefusesCrossSite(t *testing.T) {
	g := newGateway(t, boltFresh(t)(t), newUpstream(t), nil)
	port := strings.TrimPrefix(g.api.URL, "http://127.0.0.1:")
	acquire := `{"holder":"evil=x","ttl_seconds":60}`
	form := `{"ttl_seconds":60,"holder":"evil=x"}` + "\r\n" // what an enctype=text/plain form sends
	for _, c := range []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
		problem                  string
	}{
		{"form post", "POST", "/v1/leases/x/acquire", form, map[string]string{"Content-Type": "text/plain"}, 415, problem.TypeUnsupportedMedia},
		{"urlencoded form", "POST", "/v1/leases/x/acquire", "a=b", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, problem.TypeUnsupportedMedia},
		{"multipart form", "POST", "/v1/leases/x/acquire", acquire, map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, 415, problem.TypeUnsupportedMedia},
		{"no Content-Type", "POST", "/v1/leases/x/acquire", acquire, map[string]string{"Content-Type": ""}, 415, problem.TypeUnsupportedMedia},
		{"renew as text", "POST", "/v1/leases/x/renew", `{"holder":"a","epoch":1}`, map[string]string{"Content-Type": "text/plain"}, 415, problem.TypeUnsupportedMedia},
		{"release as text", "POST", "/v1/leases/x/release", `{"holder":"a","epoch":1}`, map[string]string{"Content-Type": "text/plain"}, 415, problem.TypeUnsupportedMedia},
		{"delete with a text body", "DELETE", "/v1/idempotency/x/k1", "x", map[string]string{"Content-Type": "text/plain"}, 415, problem.TypeUnsupportedMedia},
		{"fetch from another origin", "POST", "/v1/leases/x/acquire", acquire, map[string]string{"Origin": "http://127.0.0.1:1"}, 403, problem.TypeCrossOrigin},
		{"another site", "POST", "/v1/leases/x/acquire", acquire, map[string]string{"Origin": "https://evil.example"}, 403, problem.TypeCrossOrigin},
		{"opaque origin", "POST", "/v1/leases/x/acquire", acquire, map[string]string{"Origin": "null"}, 403, problem.TypeCrossOrigin},
		{"same host, https", "POST", "/v1/leases/x/acquire", acquire, map[string]string{"Origin": "https://127.0.0.1:" + port}, 403, problem.TypeCrossOrigin},
		{"audit read from another origin", "GET", "/v1/audit/leases", "", map[string]string{"Origin": "https://evil.example"}, 403, problem.TypeCrossOrigin},
		{"rebound name", "POST", "/v1/leases/x/acquire", acquire, map[string]string{"Host": "evil.example:" + port}, 421, problem.TypeMisdirected},
		{"rebound name reads the audit", "GET", "/v1/audit/leases", "", map[string]string{"Host": "evil.example"}, 421, problem.TypeMisdirected},
		{"rebound name, own origin", "GET", "/ui/", "", map[string]string{"Host": "evil.example:" + port, "Origin": "http://evil.example:" + port}, 421, problem.TypeMisdirected},
		{"another address", "GET", "/healthz", "", map[string]string{"Host": "192.0.2.7:" + port}, 421, problem.TypeMisdirected},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := doHost(t, c.method, g.api.URL+c.path, c.header, c.body)
			if a.status != c.status || !strings.Contains(string(a.body), c.problem) {
				t.Fatalf("%s %s = %d %s, want %d %s", c.method, c.path, a.status, a.body, c.status, c.problem)
			}
		})
	}
	if a := do(t, "GET", g.api.URL+"/v1/leases/x", nil, ""); a.status != http.StatusNotFound {
		t.Fatalf("after the refusals, lease x = %d %s, want 404 (never acquired)", a.status, a.body)
	}

	for _, c := range []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
	}{
		{"curl", "POST", "/v1/leases/a/acquire", acquire, map[string]string{"Content-Type": "application/json"}, 200},
		{"JSON with a charset", "POST", "/v1/leases/b/acquire", acquire, map[string]string{"Content-Type": "Application/JSON; charset=utf-8"}, 200},
		{"the page's own origin", "POST", "/v1/leases/c/acquire", acquire, map[string]string{"Origin": g.api.URL}, 200},
		{"localhost", "POST", "/v1/leases/d/acquire", acquire, map[string]string{"Host": "localhost:" + port, "Origin": "http://localhost:" + port}, 200},
		{"a .localhost name", "GET", "/healthz", "", map[string]string{"Host": "fencegw.localhost:" + port}, 200},
		{"another loopback address", "GET", "/healthz", "", map[string]string{"Host": "127.0.0.2"}, 200},
		{"IPv6 loopback", "GET", "/healthz", "", map[string]string{"Host": "[::1]:" + port}, 200},
		{"delete without a body", "DELETE", "/v1/idempotency/x/k1", "", nil, 404},
		{"HTTP/1.0 without Host", "GET", "/healthz", "", map[string]string{"Host": ""}, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			if a := doHost(t, c.method, g.api.URL+c.path, c.header, c.body); a.status != c.status {
				t.Fatalf("%s %s = %d %s, want %d", c.method, c.path, a.status, a.body, c.status)
			}
		})
	}
}

// TestControlAllowedHostsAndOrigins: control.allowed_hosts and
// control.allowed_origins admit the names and page origins they list (a
// proxy in front that rewrites Host), and no others.
func TestControlAllowedHostsAndOrigins(t *testing.T) {
	g := newGatewayWith(t, boltFresh(t)(t), newUpstream(t), gatewayOptions{control: config.Control{
		AllowedHosts: []string{"FenceGW.internal"}, AllowedOrigins: []string{"https://ops.example"}}})
	for _, c := range []struct {
		host, origin string
		status       int
	}{
		{"fencegw.internal:8081", "", 200},
		{"fencegw.internal.", "", 200},
		{"fencegw.internal", "http://fencegw.internal", 200},
		{"fencegw.internal", "https://ops.example:443", 200},
		{"fencegw.internal", "https://OPS.example", 200},
		{"127.0.0.1", "https://ops.example", 200},
		{"other.internal", "", 421},
		{"fencegw.internal", "http://ops.example", 403},
		{"fencegw.internal", "https://ops.example:8443", 403},
	} {
		a := doHost(t, "POST", g.api.URL+"/v1/leases/"+url.PathEscape(c.host)+"/acquire",
			map[string]string{"Host": c.host, "Origin": c.origin}, `{"holder":"a","ttl_seconds":5}`)
		if a.status != c.status {
			t.Errorf("Host %q Origin %q: %d %s, want %d", c.host, c.origin, a.status, a.body, c.status)
		}
	}
}

// TestControlHSTS: over TLS every answer of the control API carries
// Strict-Transport-Security; over plain HTTP none does (RFC 6797 8.1).
func TestControlHSTS(t *testing.T) {
	g := newGateway(t, boltFresh(t)(t), newUpstream(t), nil)
	tlsAPI := httptest.NewTLSServer(g.server.Control())
	t.Cleanup(tlsAPI.Close)
	for _, path := range []string{"/healthz", "/v1/leases/none", "/nowhere"} {
		resp, err := tlsAPI.Client().Get(tlsAPI.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Strict-Transport-Security"); got != control.StrictTransportSecurity {
			t.Errorf("GET %s over TLS: Strict-Transport-Security %q, want %q", path, got, control.StrictTransportSecurity)
		}
	}
	if a := do(t, "GET", g.api.URL+"/healthz", nil, ""); a.header.Get("Strict-Transport-Security") != "" {
		t.Errorf("plain HTTP answer with Strict-Transport-Security %q", a.header.Get("Strict-Transport-Security"))
	}
}

// doHost is do with the "Host" header setting the request's Host (an
// empty one sends none, as HTTP/1.0 may), and an empty "Origin" none.
func doHost(t *testing.T, method, target string, header map[string]string, body string) answer {
	t.Helper()
	h := map[string]string{}
	for k, v := range header {
		if k != "Host" && (k != "Origin" || v != "") {
			h[k] = v
		}
	}
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if _, named := h["Content-Type"]; !named && body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	if host, ok := header["Host"]; ok {
		req.Host = host
		if host == "" {
			return sendHTTP10(t, req)
		}
	}
	return send(t, req)
}

// sendHTTP10 sends req as HTTP/1.0 without a Host header, which Go's
// client cannot, and returns the answer.
func sendHTTP10(t *testing.T, req *http.Request) answer {
	t.Helper()
	conn, err := net.Dial("tcp", req.URL.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "%s %s HTTP/1.0\r\n\r\n", req.Method, req.URL.RequestURI()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}
