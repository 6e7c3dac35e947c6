package main

import (
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP (protobuf) traces endpoint in the test
// process.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []receivedSpan
}

type receivedSpan struct {
	service string
	span    *tracepb.Span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want protobuf traces", http.StatusUnsupportedMediaType)
			return
		}
		body, _ := io.ReadAll(req.Body)
		var msg collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range msg.ResourceSpans {
			var service string
			for _, kv := range rs.Resource.GetAttributes() {
				if kv.Key == "service.name" {
					service = kv.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					r.spans = append(r.spans, receivedSpan{service, s})
				}
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

// find returns the received spans of a trace.
func (r *otlpReceiver) find(traceID string) []receivedSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []receivedSpan
	for _, s := range r.spans {
		if hex.EncodeToString(s.span.TraceId) == traceID {
			out = append(out, s)
		}
	}
	return out
}

func spanAttrs(s *tracepb.Span) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		v := kv.Value
		switch {
		case v.GetStringValue() != "":
			m[kv.Key] = v.GetStringValue()
		default:
			m[kv.Key] = strings.TrimSpace(strings.Trim(v.String(), "{}"))
		}
	}
	return m
}

// sendWithTrace sends a write for invoice-sweeper with token (none if
// empty) in the client's W3C trace traceID, and returns the status and the
// problem.
func sendWithTrace(t *testing.T, url, token, traceID string) (int, map[string]any) {
	t.Helper()
	return sendTraced(t, url, token, "traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
}

// sendTraced sends a write for invoice-sweeper with token (none if empty)
// and the trace context field header: value, and returns the status and
// the problem.
func sendTraced(t *testing.T, url, token, header, value string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader("x"))
	req.Header.Set(header, value)
	if token != "" {
		req.Header.Set("Fencing-Token", token)
	}
	req.Header.Set("Fencing-Resource", "invoice-sweeper")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p map[string]any
	json.NewDecoder(resp.Body).Decode(&p)
	return resp.StatusCode, p
}

// TestAuditOverOTLP runs the gateway exporting over OTLP/HTTP to a receiver
// configured only by OTEL_* variables: an admitted, a stale and a tokenless
// write, each with a client traceparent.
func TestAuditOverOTLP(t *testing.T) {
	rcv := newOTLPReceiver(t)
	up := newRecorder(t, http.StatusNoContent)
	env := []string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_SERVICE_NAME=fencegw-audit-test", "OTEL_BSP_SCHEDULE_DELAY=100"}
	gw := startEnv(t, env, "--store", filepath.Join(t.TempDir(), "s.db"), "--route", "/w/="+up.srv.URL)

	const admitted, stale, missing = "4bf92f3577b34da6a3ce929d0e0e4731", "4bf92f3577b34da6a3ce929d0e0e4732", "4bf92f3577b34da6a3ce929d0e0e4733"
	if s, _ := sendWithTrace(t, gw.proxy+"/w/x", "2", admitted); s != http.StatusNoContent {
		t.Fatalf("admitted write = %d", s)
	}
	s, p := sendWithTrace(t, gw.proxy+"/w/x", "1", stale)
	if s != http.StatusPreconditionFailed || p["trace_id"] != stale {
		t.Fatalf("stale write = %d %v", s, p)
	}
	if s, p := sendWithTrace(t, gw.proxy+"/w/x", "", missing); s != http.StatusPreconditionRequired || p["trace_id"] != missing {
		t.Fatalf("tokenless write = %d %v", s, p)
	}
	if upstreamTraces := up.values("traceparent"); len(upstreamTraces) != 1 || !strings.Contains(upstreamTraces[0], admitted) {
		t.Fatalf("upstream traceparents %v, want the client's trace %s", upstreamTraces, admitted)
	}

	// The spans arrive with the decision attributes and the stale event.
	want := map[string]string{admitted: "admitted", stale: "stale", missing: "missing"}
	deadline := time.Now().Add(20 * time.Second)
	for id, decision := range want {
		var server *receivedSpan
		for server == nil {
			for _, s := range rcv.find(id) {
				if s.span.Kind == tracepb.Span_SPAN_KIND_SERVER {
					s := s
					server = &s
				}
			}
			if server == nil {
				if time.Now().After(deadline) {
					t.Fatalf("no server span for trace %s reached the receiver", id)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		a := spanAttrs(server.span)
		if a["fencing.decision"] != decision || a["fencing.route"] != "/w/" || server.service != "fencegw-audit-test" {
			t.Fatalf("trace %s: service %q attrs %v", id, server.service, a)
		}
		if decision == "stale" {
			if a["fencing.resource"] != "invoice-sweeper" || !strings.Contains(a["fencing.epoch.presented"], "1") ||
				!strings.Contains(a["fencing.epoch.current"], "2") {
				t.Fatalf("stale span attrs %v", a)
			}
			var event bool
			for _, e := range server.span.Events {
				event = event || e.Name == "fencing.stale_write_rejected"
			}
			if !event {
				t.Fatal("the stale span lacks the fencing.stale_write_rejected event")
			}
		}
	}

	// Metrics count the stale decision; the audit and the log name its trace.
	resp, err := http.Get(gw.api + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `decision="stale"`) {
		t.Fatalf("/metrics lacks decision=\"stale\":\n%.2000s", metrics)
	}
	assertAudited(t, gw, stale)
}

// assertAudited finds a stale refusal of trace id in the audit endpoint and
// in the gateway's log.
func assertAudited(t *testing.T, gw *proc, traceID string) {
	t.Helper()
	var list struct {
		Rejections []struct {
			TraceIDs []string `json:"trace_ids"`
			Decision string   `json:"decision"`
		} `json:"rejections"`
	}
	// The audit is written to the store within audit.flush.
	var audited bool
	for deadline := time.Now().Add(10 * time.Second); !audited && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		getJSON(t, gw.api+"/v1/audit/rejections?resource=invoice-sweeper", &list)
		for _, r := range list.Rejections {
			audited = audited || (slices.Contains(r.TraceIDs, traceID) && r.Decision == "stale")
		}
	}
	if !audited {
		t.Fatalf("the audit lacks the stale write of trace %s: %+v", traceID, list.Rejections)
	}
	var logged bool
	for _, line := range strings.Split(gw.stderr.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["decision"] == "stale" && rec["trace_id"] == traceID && rec["span_id"] != nil {
			logged = true
		}
	}
	if !logged {
		t.Fatalf("no JSON log line names the stale write of trace %s:\n%s", traceID, gw.stderr.String())
	}
}

// TestAuditSurvivesSampling: with sampling at zero nothing is exported for
// the refusal, and yet the audit and the log name it.
func TestAuditSurvivesSampling(t *testing.T) {
	rcv := newOTLPReceiver(t)
	up := okUpstream(t)
	env := []string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_TRACES_SAMPLER=traceidratio", "OTEL_TRACES_SAMPLER_ARG=0", "OTEL_BSP_SCHEDULE_DELAY=100"}
	gw := startEnv(t, env, "--store", filepath.Join(t.TempDir(), "s.db"), "--route", "/w/="+up.URL)
	const stale = "5bf92f3577b34da6a3ce929d0e0e4732"
	sendWithTrace(t, gw.proxy+"/w/x", "2", "5bf92f3577b34da6a3ce929d0e0e4731")
	if s, p := sendWithTrace(t, gw.proxy+"/w/x", "1", stale); s != http.StatusPreconditionFailed || p["trace_id"] != stale {
		t.Fatalf("stale write = %d %v", s, p)
	}
	assertAudited(t, gw, stale)
	time.Sleep(500 * time.Millisecond)
	if n := len(rcv.find(stale)); n != 0 {
		t.Fatalf("%d spans of an unsampled trace were exported", n)
	}
}

// TestOTelDisabledB3: with OTEL_SDK_DISABLED=true nothing reaches the
// receiver the other variables name, and OTEL_PROPAGATORS=b3 still decides
// what is propagated: the client's B3 trace id names the refusal in the
// problem, the audit and the log, and the upstream gets a B3 header of it.
func TestOTelDisabledB3(t *testing.T) {
	rcv := newOTLPReceiver(t)
	up := newRecorder(t, http.StatusNoContent)
	env := []string{"OTEL_SDK_DISABLED=true", "OTEL_PROPAGATORS=b3", "OTEL_TRACES_EXPORTER=otlp",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL, "OTEL_TRACES_SAMPLER=always_on", "OTEL_BSP_SCHEDULE_DELAY=100"}
	gw := startEnv(t, env, "--store", filepath.Join(t.TempDir(), "s.db"), "--route", "/w/="+up.srv.URL)

	send := func(token, traceID string) (int, map[string]any) {
		return sendTraced(t, gw.proxy+"/w/x", token, "b3", traceID+"-00f067aa0ba902b7-1")
	}
	const admitted, stale = "6bf92f3577b34da6a3ce929d0e0e4731", "6bf92f3577b34da6a3ce929d0e0e4732"
	if s, _ := send("2", admitted); s != http.StatusNoContent {
		t.Fatalf("admitted write = %d", s)
	}
	if b3, tp := up.values("b3"), up.values("traceparent"); len(b3) != 1 || !strings.HasPrefix(b3[0], admitted+"-") ||
		strings.Contains(b3[0], "00f067aa0ba902b7") || tp[0] != "" {
		t.Fatalf("upstream b3 %q, traceparent %q: want a b3 header of trace %s with the gateway's span, no traceparent", b3, tp, admitted)
	}
	if s, p := send("1", stale); s != http.StatusPreconditionFailed || p["trace_id"] != stale {
		t.Fatalf("stale write = %d %v, want 412 naming trace %s", s, p, stale)
	}
	assertAudited(t, gw, stale)
	time.Sleep(500 * time.Millisecond)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if n := len(rcv.spans); n != 0 {
		t.Fatalf("%d spans were exported with OTEL_SDK_DISABLED=true", n)
	}
}
