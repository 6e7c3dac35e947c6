package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/wire"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/server"
	"github.com/fencegw/fencegw/telemetry"
)

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(s.b.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// TestRefusalStormLogsAFewLines: a storm of stale writes on one route is
// one full log line (with its trace) and, when the interval ends, one line
// with the count of the rest, whatever epochs they present; the audit
// keeps every refusal, apart by epoch.
func TestRefusalStormLogsAFewLines(t *testing.T) {
	var logs syncBuffer
	c := embeddedConfig(t)
	c.Routes = []config.Route{{Prefix: "/w/", Upstream: "http://127.0.0.1:1", Tokens: config.TokensRaw, Resource: "r"}}
	// httptest.NewRequest names the host example.com.
	c.Control.AllowedHosts = []string{"example.com"}
	tel, err := telemetry.Setup(context.Background(), telemetry.Options{IgnoreEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Shutdown(context.Background()) })
	s := assemble(t, c, server.Options{Logger: slog.New(telemetry.LogHandler(slog.NewJSONHandler(&logs, nil))),
		Transport: cannedUpstream{}, Telemetry: tel})
	send := func(epoch string, want int) {
		req := httptest.NewRequest(http.MethodPost, "/w/x", strings.NewReader("x"))
		req.Header.Set(gateway.TokenHeader, epoch)
		rec := httptest.NewRecorder()
		s.Proxy().ServeHTTP(rec, req)
		if rec.Code != want {
			t.Fatalf("epoch %s: %d, want %d", epoch, rec.Code, want)
		}
	}
	send("5", http.StatusAccepted)
	for range 1000 {
		send("4", http.StatusPreconditionFailed)
	}
	send("3", http.StatusPreconditionFailed)
	refused := func(msg string) (lines []map[string]any) {
		for _, l := range logs.lines() {
			if l["msg"] == msg {
				lines = append(lines, l)
			}
		}
		return lines
	}
	full := refused("fenced write refused")
	if len(full) != 1 || full[0]["presented_epoch"] != 4.0 || full[0]["trace_id"] == nil {
		t.Fatalf("full refusal lines: %v, want one for epoch 4", full)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(refused("refusals suppressed")) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	again := refused("refusals suppressed")
	if len(again) != 1 || again[0]["count"] != 1000.0 || again[0]["decision"] != "stale" || again[0]["status"] != 412.0 ||
		again[0]["route"] != full[0]["route"] {
		t.Fatalf("count lines: %v, want one with count 1000 for the route's stale refusals", again)
	}
	// The audit counts every refusal: one entry per kind.
	if err := s.FlushAudit(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	s.Control().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/audit/rejections?limit=1000", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /v1/audit/rejections: %d %s", rec.Code, rec.Body)
	}
	var list wire.Rejections
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	counts := map[int64]int64{}
	for _, r := range list.Rejections {
		counts[int64(*r.PresentedEpoch)] += r.Count
	}
	if counts[4] != 1000 || counts[3] != 1 {
		t.Fatalf("audit counts by presented epoch: %v, want 1000 of epoch 4 and 1 of epoch 3 (%+v)", counts, list.Rejections)
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
