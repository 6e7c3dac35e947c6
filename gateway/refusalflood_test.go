package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/observe"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/server"
	"github.com/fencegw/fencegw/telemetry"
)

// countingHandler is a slog handler that keeps every record's message and
// attributes, for tests that count log lines.
type countingHandler struct {
	mu   sync.Mutex
	recs []map[string]any
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *countingHandler) WithGroup(string) slog.Handler            { return h }

func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	m := map[string]any{"msg": r.Message}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.Any(); return true })
	h.mu.Lock()
	h.recs = append(h.recs, m)
	h.mu.Unlock()
	return nil
}

// tally returns the lines with message full and the lines of counts with
// the sum of their counts.
func (h *countingHandler) tally(full string) (fullLines, countLines int, counted int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.recs {
		switch m["msg"] {
		case full:
			fullLines++
		case "refusals suppressed":
			countLines++
			counted += m["count"].(int64)
		}
	}
	return fullLines, countLines, counted
}

// assertLogBounded waits for the interval's count lines to account for all
// n refusals, then checks the lines stay within the cap: the budget of
// every interval the flood spanned plus, per interval, a count line for
// each kind and one for overflow.
func assertLogBounded(t *testing.T, h *countingHandler, full string, n int, took time.Duration, kinds int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	fullLines, countLines, counted := h.tally(full)
	for int64(fullLines)+counted < int64(n) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		fullLines, countLines, counted = h.tally(full)
	}
	if int64(fullLines)+counted != int64(n) {
		t.Fatalf("%d full lines and counts of %d account for %d of %d refusals", fullLines, counted, int64(fullLines)+counted, n)
	}
	intervals := int(took/observe.RefusalLogInterval) + 2
	maxFull := observe.DefaultRefusalLinesPerSecond * intervals
	maxCounts := (kinds + 1) * intervals
	t.Logf("%d refusals in %v: %d full lines (at most %d), %d count lines (at most %d)", n, took, fullLines, maxFull, countLines, maxCounts)
	if fullLines > maxFull || countLines > maxCounts {
		t.Fatalf("%d full and %d count lines for %d refusals in %v; want at most %d and %d", fullLines, countLines, n, took, maxFull, maxCounts)
	}
}

// floodGateway assembles an embedded gateway whose logs h counts, with
// telemetry (trace ids in logs).
func floodGateway(t *testing.T, h slog.Handler, transport http.RoundTripper, routes ...config.Route) *server.Server {
	t.Helper()
	c := embeddedConfig(t)
	c.Routes = routes
	// httptest.NewRequest names the host example.com.
	c.Control.AllowedHosts = []string{"example.com"}
	tel, err := telemetry.Setup(context.Background(), telemetry.Options{IgnoreEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Shutdown(context.Background()) })
	return assemble(t, c, server.Options{Logger: slog.New(telemetry.LogHandler(h)), Transport: transport, Telemetry: tel})
}

// TestProxyRefusalFloodLogBounded: 20,000 refused writes — stale ones,
// each with another epoch, over ten resources, and writes without a token —
// log no more lines than the cap allows, and the lines account for every
// refusal.
func TestProxyRefusalFloodLogBounded(t *testing.T) {
	const n, resources = 20000, 10
	h := &countingHandler{}
	s := floodGateway(t, h, cannedUpstream{}, config.Route{Prefix: "/w/", Upstream: "http://127.0.0.1:1", Tokens: config.TokensRaw})
	write := func(resource string, epoch int) int {
		req := httptest.NewRequest(http.MethodPost, "/w/x", strings.NewReader("x"))
		if epoch > 0 {
			req.Header.Set(gateway.TokenHeader, strconv.Itoa(epoch))
		}
		req.Header.Set(gateway.ResourceHeader, resource)
		rec := httptest.NewRecorder()
		s.Proxy().ServeHTTP(rec, req)
		return rec.Code
	}
	for i := range resources {
		if code := write(fmt.Sprintf("r-%d", i), n+1); code != http.StatusAccepted {
			t.Fatalf("admit r-%d: %d", i, code)
		}
	}
	start := time.Now()
	for i := range n {
		epoch, want := i+1, http.StatusPreconditionFailed
		if i%3 == 0 {
			epoch, want = 0, http.StatusPreconditionRequired
		}
		if code := write(fmt.Sprintf("r-%d", i%resources), epoch); code != want {
			t.Fatalf("write %d: %d, want %d", i, code, want)
		}
	}
	assertLogBounded(t, h, "fenced write refused", n, time.Since(start), 2)
}

// TestRenewalRefusalFloodLogBounded: 20,000 renewals refused by the
// control API (another holder, each with another epoch) log no more lines
// than the cap allows, and the lines account for every refusal.
func TestRenewalRefusalFloodLogBounded(t *testing.T) {
	const n = 20000
	h := &countingHandler{}
	s := floodGateway(t, h, cannedUpstream{}, config.Route{Prefix: "/w/", Upstream: "http://127.0.0.1:1", Tokens: config.TokensRaw})
	call := func(op, body string) int {
		req := httptest.NewRequest(http.MethodPost, "/v1/leases/jobs/"+op, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		s.Control().ServeHTTP(rec, req)
		return rec.Code
	}
	if code := call("acquire", `{"holder":"node-a","ttl_seconds":60}`); code != http.StatusOK {
		t.Fatalf("acquire: %d", code)
	}
	start := time.Now()
	for i := range n {
		if code := call("renew", fmt.Sprintf(`{"holder":"node-b","epoch":%d}`, i+1)); code != http.StatusConflict {
			t.Fatalf("renew %d: %d, want 409", i, code)
		}
	}
	assertLogBounded(t, h, "lease renew refused", n, time.Since(start), 1)
}

// brokenBody is an upstream answer whose body fails after a few bytes.
type brokenBody struct{}

func (brokenBody) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	body := io.NopCloser(io.MultiReader(strings.NewReader("partial"), errReader{}))
	return &http.Response{StatusCode: http.StatusOK, ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{},
		Body: body, ContentLength: -1, Request: r}, nil
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("upstream connection reset") }

// TestProxyErrorsAreStructured: an upstream that cannot be reached is one
// JSON line with the request's route and trace id; the reverse proxy's own
// complaint about a body cut mid-copy is a JSON line too, never plain
// text from the standard logger.
func TestProxyErrorsAreStructured(t *testing.T) {
	var logs syncBuffer
	route := config.Route{Prefix: "/w/", Upstream: "http://127.0.0.1:1", Tokens: config.TokensRaw, Resource: "r"}
	s := floodGateway(t, slog.NewJSONHandler(&logs, nil), nil, route)
	req := httptest.NewRequest(http.MethodPost, "/w/x", strings.NewReader("x"))
	req.Header.Set(gateway.TokenHeader, "1")
	rec := httptest.NewRecorder()
	s.Proxy().ServeHTTP(rec, req)
	if rec.Code != http.StatusBadGateway {
		t.Fatalf("unreachable upstream: %d %s", rec.Code, rec.Body)
	}
	var failed map[string]any
	for _, l := range logs.lines() {
		if l["msg"] == "upstream failed" {
			failed = l
		}
	}
	if failed == nil || failed["route"] == nil || failed["route"] == "" || failed["trace_id"] == nil {
		t.Fatalf("upstream failure line %v, want JSON with route and trace_id (log %v)", failed, logs.lines())
	}

	var cut syncBuffer
	s = floodGateway(t, slog.NewJSONHandler(&cut, nil), brokenBody{}, route)
	req = httptest.NewRequest(http.MethodPost, "/w/x", strings.NewReader("x"))
	req.Header.Set(gateway.TokenHeader, "1")
	s.Proxy().ServeHTTP(httptest.NewRecorder(), req)
	var proxyLines int
	for _, l := range cut.lines() {
		if l["component"] == "reverse_proxy" {
			proxyLines++
		}
	}
	raw := cut.String()
	if proxyLines == 0 || strings.Count(raw, "\n") != len(cut.lines()) {
		t.Fatalf("the reverse proxy's complaint is not (only) JSON lines: %q", raw)
	}
}

// TestStoreDownFloodLogBounded: with the store down, 20,000 writes, each
// to another resource at another epoch, are 503s whose log stays within
// the cap; the first carries its cause.
func TestStoreDownFloodLogBounded(t *testing.T) {
	const n = 20000
	h := &countingHandler{}
	c := embeddedConfig(t)
	c.Routes = []config.Route{{Prefix: "/w/", Upstream: "http://127.0.0.1:1", Tokens: config.TokensRaw}}
	s := assemble(t, c, server.Options{Logger: slog.New(h), Transport: cannedUpstream{}, Store: failingStore{boltFresh(t)(t)}})
	start := time.Now()
	for i := range n {
		req := httptest.NewRequest(http.MethodPost, "/w/x", strings.NewReader("x"))
		req.Header.Set(gateway.TokenHeader, strconv.Itoa(i+1))
		req.Header.Set(gateway.ResourceHeader, fmt.Sprintf("r-%d", i))
		rec := httptest.NewRecorder()
		s.Proxy().ServeHTTP(rec, req)
		if rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("write %d: %d, want 503", i, rec.Code)
		}
	}
	assertLogBounded(t, h, "fenced write refused", n, time.Since(start), 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.recs {
		if m["msg"] == "fenced write refused" {
			if m["status"] != int64(http.StatusServiceUnavailable) || m["error"] == nil {
				t.Fatalf("full line %v, want the 503 with its cause", m)
			}
			return
		}
	}
	t.Fatal("no 503 was logged in full")
}
