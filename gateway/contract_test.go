package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/problem"
	"github.com/fencegw/fencegw/gateway/upstream"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/testutil/testpg"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testpg.CloseShared()
	code = finishSpecCheck(code) // fails the run if an exchange broke openapi.yaml
	os.Exit(code)
}

// TestHTTPContract runs the proxy's contract against every store.
func TestHTTPContract(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			f := b.fresh(t)
			up := newUpstream(t)
			g := newGateway(t, f(t), up, nil)

			t.Run("AdmitThenRefuseStale", func(t *testing.T) { testAdmitThenRefuseStale(t, g, up) })
			t.Run("MissingToken", func(t *testing.T) { testMissingToken(t, g, up) })
			t.Run("MalformedTokens", func(t *testing.T) { testMalformedTokens(t, g, up) })
			t.Run("IntegerOrder", func(t *testing.T) { testIntegerOrder(t, g) })
			t.Run("SafeMethodsPass", func(t *testing.T) { testSafeMethodsPass(t, g, up) })
			t.Run("ResourceFromHeader", func(t *testing.T) { testResourceFromHeader(t, g) })
			t.Run("BadPathsAndRoutes", func(t *testing.T) { testBadPathsAndRoutes(t, g) })
			t.Run("ReadyAndHealthy", func(t *testing.T) {
				for _, p := range []string{"/healthz", "/readyz"} {
					if a := do(t, "GET", g.api.URL+p, nil, ""); a.status != http.StatusOK {
						t.Fatalf("%s = %d %s", p, a.status, a.body)
					}
				}
			})
		})
	}
}

func testAdmitThenRefuseStale(t *testing.T, g *gw, up *testUpstream) {
	for i, e := range []string{"1", "2", "2"} {
		a := g.write(t, "/email/send", e)
		if a.status != http.StatusCreated || a.header.Get("X-Upstream") != "yes" || string(a.body) != "stored:payload" {
			t.Fatalf("write %d (epoch %s) = %d %s", i, e, a.status, a.body)
		}
	}
	got := up.requests()
	if len(got) != 3 {
		t.Fatalf("upstream received %d requests, want 3", len(got))
	}
	for i, r := range got {
		if r.Header.Get(gateway.EpochHeader) != []string{"1", "2", "2"}[i] ||
			r.Header.Get(gateway.ResourceHeader) != "invoice-sweeper" ||
			r.Header.Get(gateway.TokenHeader) != "" || r.URL.Path != "/email/send" {
			t.Fatalf("upstream request %d: path %s headers %v", i, r.URL.Path, r.Header)
		}
	}
	a := g.write(t, "/email/send", "1")
	if a.status != http.StatusPreconditionFailed {
		t.Fatalf("stale write = %d %s", a.status, a.body)
	}
	p := a.problem(t)
	// A raw epoch's refusal tells no epoch the caller did not send.
	if p["resource"] != "invoice-sweeper" || p["presented_epoch"] != "1" || p["current_epoch"] != nil ||
		p["type"] != problem.TypeStaleEpoch {
		t.Fatalf("stale problem = %v", p)
	}
	if n := len(up.requests()); n != 3 {
		t.Fatalf("stale write reached the upstream (%d requests)", n)
	}
	if e := g.fenceEpoch(t, "invoice-sweeper"); e != 2 {
		t.Fatalf("fence epoch = %d, want 2", e)
	}
}

func testMissingToken(t *testing.T, g *gw, up *testUpstream) {
	before := len(up.requests())
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		a := do(t, m, g.proxy.URL+"/email/send", nil, "x")
		if a.status != http.StatusPreconditionRequired {
			t.Fatalf("%s without token = %d %s", m, a.status, a.body)
		}
		if p := a.problem(t); p["type"] != problem.TypeTokenRequired || p["resource"] != "invoice-sweeper" {
			t.Fatalf("problem = %v", p)
		}
	}
	if len(up.requests()) != before {
		t.Fatal("a tokenless write reached the upstream")
	}
}

func testMalformedTokens(t *testing.T, g *gw, up *testUpstream) {
	before := len(up.requests())
	for _, tok := range []string{"abc", "0", "-3", "1e3", "9223372036854775808", "1.5", "0x10", "+5"} {
		a := g.write(t, "/email/send", tok)
		if a.status != http.StatusBadRequest {
			t.Fatalf("token %q = %d %s", tok, a.status, a.body)
		}
		if p := a.problem(t); p["type"] != problem.TypeMalformedToken {
			t.Fatalf("token %q problem = %v", tok, p)
		}
	}
	// Two tokens in one request are ambiguous.
	req := httptest.NewRequest("POST", g.proxy.URL+"/email/send", nil)
	req.RequestURI = ""
	req.Header.Add(gateway.TokenHeader, "5")
	req.Header.Add(gateway.TokenHeader, "6")
	if a := send(t, req); a.status != http.StatusBadRequest {
		t.Fatalf("two tokens = %d", a.status)
	}
	if len(up.requests()) != before {
		t.Fatal("a malformed write reached the upstream")
	}
	if e := g.fenceEpoch(t, "invoice-sweeper"); e > 2 {
		t.Fatalf("a malformed token moved the fence to %d", e)
	}
}

func testIntegerOrder(t *testing.T, g *gw) {
	const p53 = int64(1) << 53
	steps := []struct {
		res         string
		low, high   int64
		stale       int64
		wantCurrent int64
	}{
		{"order-9", 9, 10, 9, 10},
		{"order-99", 99, 100, 99, 100},
		{"order-53", p53, p53 + 1, p53, p53 + 1},
		{"order-max", 9223372036854775806, 9223372036854775807, 9223372036854775806, 9223372036854775807},
	}
	for _, s := range steps {
		h := map[string]string{gateway.ResourceHeader: s.res}
		for _, e := range []int64{s.low, s.high} {
			h[gateway.TokenHeader] = strconv.FormatInt(e, 10)
			if a := do(t, "POST", g.proxy.URL+"/any/x", h, ""); a.status != http.StatusCreated {
				t.Fatalf("%s epoch %d = %d %s", s.res, e, a.status, a.body)
			}
		}
		h[gateway.TokenHeader] = strconv.FormatInt(s.stale, 10)
		a := do(t, "POST", g.proxy.URL+"/any/x", h, "")
		if a.status != http.StatusPreconditionFailed {
			t.Fatalf("%s stale %d = %d %s", s.res, s.stale, a.status, a.body)
		}
		// JSON numbers lose precision above 2^53 in float64; compare the raw
		// text. A raw epoch's refusal names no current epoch (the fence
		// API below does).
		if want := `"presented_epoch":"` + strconv.FormatInt(s.stale, 10) + `"`; !strings.Contains(string(a.body), want) ||
			strings.Contains(string(a.body), "current_epoch") {
			t.Fatalf("%s problem %s lacks %s or names the current epoch", s.res, a.body, want)
		}
		if e := g.fenceEpoch(t, s.res); e != s.wantCurrent {
			t.Fatalf("%s fence = %d, want %d", s.res, e, s.wantCurrent)
		}
	}
}

func testSafeMethodsPass(t *testing.T, g *gw, up *testUpstream) {
	before := len(up.requests())
	for _, m := range []string{"GET", "HEAD", "OPTIONS"} {
		a := do(t, m, g.proxy.URL+"/email/status", map[string]string{gateway.TokenHeader: "1"}, "")
		if a.status != http.StatusCreated {
			t.Fatalf("%s = %d %s", m, a.status, a.body)
		}
	}
	got := up.requests()[before:]
	if len(got) != 3 {
		t.Fatalf("upstream got %d safe requests, want 3", len(got))
	}
	for _, r := range got {
		if r.Header.Get(gateway.TokenHeader) != "" || r.Header.Get(gateway.EpochHeader) != "" {
			t.Fatalf("unfenced %s carried fencing headers: %v", r.Method, r.Header)
		}
	}
}

func testResourceFromHeader(t *testing.T, g *gw) {
	// No resource named by route or request.
	a := g.write(t, "/any/x", "1")
	if a.status != http.StatusBadRequest || a.problem(t)["type"] != problem.TypeBadResource {
		t.Fatalf("no resource = %d %s", a.status, a.body)
	}
	h := map[string]string{gateway.TokenHeader: "4", gateway.ResourceHeader: "jobs:tenant-1"}
	if a := do(t, "POST", g.proxy.URL+"/any/x", h, ""); a.status != http.StatusCreated {
		t.Fatalf("header resource = %d %s", a.status, a.body)
	}
	h[gateway.TokenHeader] = "3"
	if a := do(t, "POST", g.proxy.URL+"/any/x", h, ""); a.status != http.StatusPreconditionFailed {
		t.Fatalf("stale header resource = %d %s", a.status, a.body)
	}
	// Another resource is another fence.
	h[gateway.ResourceHeader] = "jobs:tenant-2"
	if a := do(t, "POST", g.proxy.URL+"/any/x", h, ""); a.status != http.StatusCreated {
		t.Fatalf("other resource = %d %s", a.status, a.body)
	}
}

func testBadPathsAndRoutes(t *testing.T, g *gw) {
	if a := g.write(t, "/nowhere", "1"); a.status != http.StatusNotFound || a.problem(t)["type"] != problem.TypeNoRoute {
		t.Fatalf("unrouted = %d %s", a.status, a.body)
	}
	req, _ := http.NewRequest("POST", g.proxy.URL+"/any/x", nil)
	req.URL.Path = "/any/../email/send" // sent as is, not cleaned by the client
	req.URL.RawPath = ""
	req.Header.Set(gateway.TokenHeader, "1")
	req.Header.Set(gateway.ResourceHeader, "r")
	if a := send(t, req); a.status != http.StatusBadRequest {
		t.Fatalf("dot-dot path = %d", a.status)
	}
}

// TestSecondReplicaRefusesSuperseded runs two gateways over one shared store:
// what one admitted, the other enforces.
func TestSecondReplicaRefusesSuperseded(t *testing.T) {
	for _, b := range backends() {
		if b.name == "embedded" {
			continue // one process owns the file; see TestRestartKeepsHWM
		}
		t.Run(b.name, func(t *testing.T) {
			f := b.fresh(t)
			up := newUpstream(t)
			g1, g2 := newGateway(t, f(t), up, nil), newGateway(t, f(t), up, nil)
			for _, step := range []struct {
				g      *gw
				epoch  string
				status int
			}{
				{g1, "1", 201}, {g2, "1", 201}, {g1, "2", 201},
				{g2, "1", 412}, {g2, "2", 201}, {g2, "3", 201},
				{g1, "2", 412}, {g1, "3", 201},
			} {
				if a := step.g.write(t, "/email/send", step.epoch); a.status != step.status {
					t.Fatalf("epoch %s = %d, want %d: %s", step.epoch, a.status, step.status, a.body)
				}
			}
			if e := g1.fenceEpoch(t, "invoice-sweeper"); e != 3 {
				t.Fatalf("g1 fence = %d", e)
			}
		})
	}
}

// TestRestartKeepsHWM closes the store and opens it again under a new gateway.
func TestRestartKeepsHWM(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			f := b.fresh(t)
			up := newUpstream(t)
			s := f(t)
			g := newGateway(t, s, up, nil)
			if a := g.write(t, "/email/send", "7"); a.status != 201 {
				t.Fatalf("write = %d", a.status)
			}
			g.proxy.Close()
			g.api.Close()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			g2 := newGateway(t, f(t), up, nil)
			if a := g2.write(t, "/email/send", "6"); a.status != http.StatusPreconditionFailed {
				t.Fatalf("after restart, epoch 6 = %d %s", a.status, a.body)
			}
			if a := g2.write(t, "/email/send", "7"); a.status != 201 {
				t.Fatalf("after restart, epoch 7 = %d %s", a.status, a.body)
			}
		})
	}
}

// TestStoreOutageFailsClosed stops the store: a newer epoch gets 503 with
// Retry-After, /readyz says 503, nothing reaches the upstream; admission
// resumes when the store returns.
func TestStoreOutageFailsClosed(t *testing.T) {
	for _, b := range backends() {
		if b.outage == nil {
			continue // the embedded store is not a separate service
		}
		t.Run(b.name, func(t *testing.T) {
			f, stop, restart := b.outage(t)
			up := newUpstream(t)
			g := newGateway(t, f(t), up, nil)
			if a := g.write(t, "/email/send", "3"); a.status != 201 {
				t.Fatalf("write = %d %s", a.status, a.body)
			}
			stop()
			before := len(up.requests())
			for _, e := range []string{"4", "3"} {
				a := g.write(t, "/email/send", e)
				if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" {
					t.Fatalf("epoch %s with store down = %d (Retry-After %q) %s", e, a.status, a.header.Get("Retry-After"), a.body)
				}
				if p := a.problem(t); p["type"] != problem.TypeStoreUnavailable {
					t.Fatalf("problem = %v", p)
				}
			}
			// Stale is known from memory even now.
			if a := g.write(t, "/email/send", "2"); a.status != http.StatusPreconditionFailed {
				t.Fatalf("stale with store down = %d", a.status)
			}
			if a := do(t, "GET", g.api.URL+"/readyz", nil, ""); a.status != http.StatusServiceUnavailable {
				t.Fatalf("/readyz with store down = %d", a.status)
			}
			if n := len(up.requests()); n != before {
				t.Fatalf("%d writes reached the upstream while the store was down", n-before)
			}
			restart()
			deadline := time.Now().Add(30 * time.Second)
			for {
				a := g.write(t, "/email/send", "4")
				if a.status == 201 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("store back, epoch 4 still = %d %s", a.status, a.body)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if a := do(t, "GET", g.api.URL+"/readyz", nil, ""); a.status != http.StatusOK {
				t.Fatalf("/readyz after restart = %d", a.status)
			}
		})
	}
}

func TestUpstreamFailures(t *testing.T) {
	f := boltFresh(t)
	up := newUpstream(t)
	tr := upstream.NewTransport(upstream.TransportOptions{ResponseHeaderTimeout: 200 * time.Millisecond})
	t.Cleanup(tr.CloseIdleConnections)
	g := newGateway(t, f(t), up, tr)

	up.mu.Lock()
	up.delay = 2 * time.Second
	up.mu.Unlock()
	a := g.write(t, "/email/send", "1")
	if a.status != http.StatusGatewayTimeout || a.problem(t)["type"] != problem.TypeUpstreamTimeout {
		t.Fatalf("slow upstream = %d %s", a.status, a.body)
	}
	up.mu.Lock()
	up.delay = 0
	up.mu.Unlock()

	up.srv.Close()
	a = g.write(t, "/email/send", "1")
	if a.status != http.StatusBadGateway || a.problem(t)["type"] != problem.TypeUpstreamFailed {
		t.Fatalf("down upstream = %d %s", a.status, a.body)
	}
	if p := a.problem(t); p["resource"] != "invoice-sweeper" || p["presented_epoch"] != "1" {
		t.Fatalf("502 problem = %v", p)
	}
}

func TestBodyLimitAndStreaming(t *testing.T) {
	f := boltFresh(t)
	up := newUpstream(t)
	g := newGateway(t, f(t), up, nil)
	big := make([]byte, 2<<20)
	a := do(t, "POST", g.proxy.URL+"/email/send", map[string]string{gateway.TokenHeader: "1"}, string(big))
	if a.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("2 MiB body = %d", a.status)
	}
	if len(up.requests()) != 0 {
		t.Fatal("an oversized body reached the upstream")
	}
}

func TestStripPrefix(t *testing.T) {
	f := boltFresh(t)
	up := newUpstream(t)
	g := newGateway(t, f(t), up, nil, routeSpec{prefix: "/pay/", resource: "tenant-{segment:1}", strip: true})
	if a := g.write(t, "/pay/42/charge", "1"); a.status != 201 {
		t.Fatalf("= %d %s", a.status, a.body)
	}
	r := up.requests()[0]
	if r.URL.Path != "/42/charge" || r.Header.Get(gateway.ResourceHeader) != "tenant-42" {
		t.Fatalf("upstream saw %s resource %q", r.URL.Path, r.Header.Get(gateway.ResourceHeader))
	}
}
