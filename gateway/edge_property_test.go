package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/server"
)

// The edge invariant: every request the upstream receives was admitted for
// exactly the resource and epoch it carries, as the upstream itself reads
// them, and its path is inside its route. The property test and the fuzz
// target send requests with any method case, dotted, encoded, doubled and
// trailing-slash paths, prefixes with and without a slash, stripping on and
// off, and resource headers repeated, twinned and listed in Connection,
// as raw bytes over TCP through the real proxy.

// edgeRoute is one route of the edge harness and how its upstream reads
// the resource back from what it received.
type edgeRoute struct {
	prefix, resource, base string // base: the upstream path the route sends to
	strip                  bool
	methods                []string
	// read names the resource from the upstream's view of the request,
	// given the path below base; ok false when it cannot.
	read func(sub string, h http.Header) (string, bool)
}

var edgeRoutes = []edgeRoute{
	{prefix: "/tenants", resource: "tenant-{segment:1}", base: "/r1", strip: true,
		read: func(sub string, _ http.Header) (string, bool) { return segmentAsMux(sub, 1, "tenant-") }},
	{prefix: "/docs/", resource: "doc-{segment:1}", base: "/r2",
		read: func(sub string, _ http.Header) (string, bool) {
			return segmentAsMux(strings.TrimPrefix(sub, "/docs"), 1, "doc-")
		}},
	{prefix: "/hdr/", resource: "t-{header:X-Tenant}", base: "/r3", strip: true,
		read: func(_ string, h http.Header) (string, bool) { return headerAsLenient(h, "X-Tenant", "t-") }},
	{prefix: "/any/", base: "/r4",
		read: func(_ string, h http.Header) (string, bool) { return "", true }}, // named by the gateway's own header
	{prefix: "/m/", resource: "m-fixed", base: "/r5", methods: []string{"POST"},
		read: func(string, http.Header) (string, bool) { return "m-fixed", true }},
}

// segmentAsMux reads the nth segment of an escaped path as a Go 1.22
// ServeMux wildcard does: split on "/" first, then unescape the segment.
func segmentAsMux(escaped string, n int, prefix string) (string, bool) {
	segs := strings.Split(strings.TrimPrefix(escaped, "/"), "/")
	if len(segs) < n || segs[n-1] == "" {
		return "", false
	}
	v, err := url.PathUnescape(segs[n-1])
	if err != nil {
		return "", false
	}
	return prefix + v, true
}

// headerAsLenient reads a header as the most lenient server might: any
// spelling that folds to the same name counts, and a list is ambiguous.
func headerAsLenient(h http.Header, name, prefix string) (string, bool) {
	var vals []string
	fold := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "_", "-") }
	for k, v := range h {
		if fold(k) == fold(name) {
			vals = append(vals, v...)
		}
	}
	if len(vals) != 1 || strings.Contains(vals[0], ",") {
		return "", false
	}
	return prefix + vals[0], true
}

// receipt is one request as the recording upstream received it.
type receipt struct {
	method, escapedPath string
	header              http.Header
}

// edgeHarness is a gateway on an embedded store behind a real TCP
// listener, with a recording upstream.
type edgeHarness struct {
	proxyAddr string
	mu        sync.Mutex
	got       map[string]receipt // by X-Edge-Id
	hwm       map[string]int64   // the highest epoch admitted per resource, as the client saw
}

func newEdgeHarness(tb testing.TB) *edgeHarness {
	tb.Helper()
	h := &edgeHarness{got: map[string]receipt{}, hwm: map[string]int64{}}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h.mu.Lock()
		h.got[r.Header.Get("X-Edge-Id")] = receipt{method: r.Method, escapedPath: r.URL.EscapedPath(), header: r.Header.Clone()}
		h.mu.Unlock()
		w.Header().Set("X-Upstream", "yes")
		w.WriteHeader(http.StatusCreated)
	}))
	tb.Cleanup(up.Close)
	c := embeddedConfig(tb)
	c.MaxBodyBytes = 1 << 20
	for _, er := range edgeRoutes {
		c.Routes = append(c.Routes, config.Route{Prefix: er.prefix, Upstream: up.URL + er.base, StripPrefix: er.strip,
			Tokens: config.TokensRaw, Methods: er.methods, Resource: er.resource})
	}
	proxy := httptest.NewServer(assemble(tb, c, server.Options{}).Proxy())
	tb.Cleanup(proxy.Close)
	h.proxyAddr = proxy.Listener.Addr().String()
	return h
}

// edgeRequest is one generated request.
type edgeRequest struct {
	method, target string
	headers        [][2]string // in order, names as sent
	epoch          int64       // 0: no token
}

func (r edgeRequest) String() string {
	return fmt.Sprintf("%s %s %q epoch %d", r.method, r.target, r.headers, r.epoch)
}

// send writes r as raw bytes on a fresh connection and returns the status
// and whether the gateway answered itself (a problem document).
func (h *edgeHarness) send(tb testing.TB, id string, r edgeRequest) (int, bool) {
	tb.Helper()
	c, err := net.DialTimeout("tcp", h.proxyAddr, 5*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: gw\r\nX-Edge-Id: %s\r\nContent-Length: 4\r\nConnection: close\r\n", r.method, r.target, id)
	if r.epoch > 0 {
		fmt.Fprintf(&b, "Fencing-Token: %d\r\n", r.epoch)
	}
	for _, kv := range r.headers {
		fmt.Fprintf(&b, "%s: %s\r\n", kv[0], kv[1])
	}
	b.WriteString("\r\nbody")
	if _, err := io.WriteString(c, b.String()); err != nil {
		tb.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		// Go's server refuses some requests before any handler runs
		// (a malformed request line, a bad header); nothing was forwarded.
		return 0, true
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Content-Type") == gateway.ProblemContentType || resp.Header.Get("X-Upstream") == ""
}

// check sends r and verifies the invariant for what the upstream got.
func (h *edgeHarness) check(tb testing.TB, seq int, r edgeRequest) int {
	tb.Helper()
	id := strconv.Itoa(seq)
	status, own := h.send(tb, id, r)
	h.check1(tb, id, r, status, own)
	return status
}

func (h *edgeHarness) check1(tb testing.TB, id string, r edgeRequest, status int, own bool) {
	tb.Helper()
	h.mu.Lock()
	got, reached := h.got[id]
	h.mu.Unlock()
	if !reached {
		return
	}
	if own {
		tb.Fatalf("%v: the gateway answered %d itself, yet the upstream received it", r, status)
	}
	er, sub, ok := routeOf(got.escapedPath)
	if !ok {
		tb.Fatalf("%v: the upstream received %s, outside every route", r, got.escapedPath)
	}
	if err := policy.CheckEscapedPath(got.escapedPath); err != nil {
		tb.Fatalf("%v: upstream path %s: %v", r, got.escapedPath, err)
	}
	decoded, err := url.PathUnescape(got.escapedPath)
	if err != nil || policy.CheckPath(decoded) != nil {
		tb.Fatalf("%v: the upstream received the unclean path %s", r, got.escapedPath)
	}
	upper := strings.ToUpper(got.method)
	fencedMethod := upper != "GET" && upper != "HEAD" && upper != "OPTIONS"
	if er.methods != nil {
		fencedMethod = upper == "POST"
	}
	if got.method != upper {
		tb.Fatalf("%v: the upstream received the method %q", r, got.method)
	}
	if !fencedMethod {
		return
	}
	epochs, resources := got.header.Values(gateway.EpochHeader), got.header.Values(gateway.ResourceHeader)
	if len(epochs) != 1 || len(resources) != 1 {
		tb.Fatalf("%v: a write reached the upstream with Fencing-Epoch %q, Fencing-Resource %q", r, epochs, resources)
	}
	resource := resources[0]
	if want, ok := er.read(sub, got.header); !ok || (want != "" && want != resource) {
		tb.Fatalf("%v: admitted for %q, but the upstream reads resource %q (%v)", r, resource, want, ok)
	}
	epoch, _ := strconv.ParseInt(epochs[0], 10, 64)
	if epoch != r.epoch {
		tb.Fatalf("%v: the upstream received epoch %d", r, epoch)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if epoch < h.hwm[resource] {
		tb.Fatalf("%v: epoch %d of %q reached the upstream after %d was admitted", r, epoch, resource, h.hwm[resource])
	}
	h.hwm[resource] = epoch
}

// routeOf finds the route whose upstream base prefixes the received path,
// and the path below that base.
func routeOf(escaped string) (edgeRoute, string, bool) {
	for _, er := range edgeRoutes {
		if sub, ok := policy.Subpath(escaped, er.base); ok {
			return er, sub, true
		}
	}
	return edgeRoute{}, "", false
}

var (
	edgeMethods  = []string{"POST", "POST", "POST", "post", "Post", "PUT", "put", "PATCH", "DELETE", "delete", "GET", "get", "HEAD", "OPTIONS", "PURGE", "purge"}
	edgePrefixes = []string{"/tenants", "/tenants/", "/tenants..", "/tenantsX", "/TENANTS", "/docs", "/docs/", "/hdr/", "/hdr", "/any/", "/m/", "/m", "/"}
	edgeSegments = []string{"42", "43", "a", "%41", "a b", "%20"}
	edgeTricks   = []string{".", "..", "", "%2F", "%2f", "a%2Fb", "%2E", "%2e%2e", "%5C", "x;y", "%3B", "%00", "..%2F", "%252F"}
	edgeValues   = []string{"7", "7", "8", "7,8", "", " 7"}
)

// randomEdgeRequest draws one request from rng.
func randomEdgeRequest(rng *rand.Rand) edgeRequest {
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	var b strings.Builder
	b.WriteString(pick(edgePrefixes))
	for n := rng.IntN(4); n > 0; n-- {
		if !strings.HasSuffix(b.String(), "/") || rng.IntN(4) == 0 {
			b.WriteByte('/')
		}
		if rng.IntN(6) == 0 {
			b.WriteString(pick(edgeTricks))
		} else {
			b.WriteString(pick(edgeSegments))
		}
	}
	if rng.IntN(3) == 0 {
		b.WriteByte('/')
	}
	r := edgeRequest{method: pick(edgeMethods), target: strings.ReplaceAll(b.String(), " ", "%20")}
	if rng.IntN(8) != 0 {
		r.epoch = 1 + rng.Int64N(5)
	}
	for _, name := range []string{"X-Tenant", "X_Tenant", "x-tenant", "X_TENANT"} {
		if rng.IntN(6) == 0 {
			r.headers = append(r.headers, [2]string{name, pick(edgeValues)})
		}
	}
	if rng.IntN(2) == 0 {
		r.headers = append(r.headers, [2]string{"X-Tenant", pick(edgeValues)})
	}
	switch rng.IntN(10) {
	case 0:
		r.headers = append(r.headers, [2]string{"Connection", "X-Tenant"})
	case 1:
		r.headers = append(r.headers, [2]string{"Connection", "keep-alive, x_tenant"})
	}
	if rng.IntN(3) != 0 {
		r.headers = append(r.headers, [2]string{gateway.ResourceHeader, "res-" + strconv.Itoa(rng.IntN(3))})
	}
	return r
}

// TestEdgeInvariantProperty sends random requests through the proxy and
// checks the edge invariant for each. FENCEGW_EDGE_N sets how many (a few
// hundred by default, in seconds); FENCEGW_EDGE_SEED replays a run.
func TestEdgeInvariantProperty(t *testing.T) {
	n := 600
	if s := os.Getenv("FENCEGW_EDGE_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FENCEGW_EDGE_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (FENCEGW_EDGE_SEED=%d replays it), %d requests", seed, seed, n)
	rng := rand.New(rand.NewPCG(seed, 0))
	h := newEdgeHarness(t)
	forwarded, statuses := 0, map[int]int{}
	for i := 0; i < n; i++ {
		statuses[h.check(t, i, randomEdgeRequest(rng))]++
	}
	t.Logf("answers by status: %v", statuses)
	h.mu.Lock()
	forwarded = len(h.got)
	h.mu.Unlock()
	if forwarded == 0 || forwarded == n {
		t.Fatalf("%d of %d requests reached the upstream: the generator does not exercise both sides", forwarded, n)
	}
	t.Logf("%d of %d requests reached the upstream; every one was admitted as the upstream reads it", forwarded, n)
}

// FuzzEdgeInvariant lets the fuzzer choose the method, the path and the
// tenant headers.
func FuzzEdgeInvariant(f *testing.F) {
	f.Add("POST", "/tenants/42/pay", "7", "", uint8(3))
	f.Add("post", "/tenants../base/42/pay", "7", "8", uint8(1))
	f.Add("POST", "/docs/a%2Fb/x", "", "", uint8(2))
	f.Add("PUT", "/hdr/x", "7", "8", uint8(4))
	h := newEdgeHarness(f)
	seq := 0
	f.Fuzz(func(t *testing.T, method, target, tenant, twin string, epoch uint8) {
		if !validToken(method) || !validTarget(target) || !validValue(tenant) || !validValue(twin) {
			return
		}
		r := edgeRequest{method: method, target: target, epoch: int64(epoch % 8)}
		if tenant != "" {
			r.headers = append(r.headers, [2]string{"X-Tenant", tenant})
		}
		if twin != "" {
			r.headers = append(r.headers, [2]string{"X_Tenant", twin})
		}
		seq++
		h.check(t, seq, r)
	})
}

func validToken(s string) bool {
	if s == "" || len(s) > 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return false
		}
	}
	return true
}

func validTarget(s string) bool {
	if s == "" || s[0] != '/' || len(s) > 200 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

func validValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return len(s) < 64
}
