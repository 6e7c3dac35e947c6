package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// metricsReceiver is an OTLP/HTTP (protobuf) metrics receiver that keeps
// the names of the metrics it receives.
type metricsReceiver struct {
	mu    sync.Mutex
	names []string
}

func (r *metricsReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	var msg collectormetrics.ExportMetricsServiceRequest
	if req.URL.Path != "/v1/metrics" || proto.Unmarshal(b, &msg) != nil {
		http.Error(w, "want protobuf metrics at /v1/metrics", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rm := range msg.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				r.names = append(r.names, m.GetName())
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&collectormetrics.ExportMetricsServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *metricsReceiver) received() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.names, " ")
}

// exportingEnv is an environment that samples every trace and exports spans
// and metrics over OTLP/HTTP to the receivers at base URLs traces and
// metrics.
func exportingEnv(traces, metrics string) map[string]string {
	return map[string]string{
		"OTEL_TRACES_EXPORTER":                "otlp",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":  traces + "/v1/traces",
		"OTEL_METRICS_EXPORTER":               "otlp",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": metrics + "/v1/metrics",
		"OTEL_TRACES_SAMPLER":                 "always_on",
	}
}

// countDecision adds to a counter of tel's meter provider.
func countDecision(t *testing.T, tel *Telemetry) {
	t.Helper()
	c, err := tel.MeterProvider.Meter("test").Int64Counter("fencegw.test.decisions")
	if err != nil {
		t.Fatal(err)
	}
	c.Add(context.Background(), 1)
}

// TestMetricsExporter: OTEL_METRICS_EXPORTER adds a reader; /metrics keeps
// serving the same metrics.
func TestMetricsExporter(t *testing.T) {
	traces, metrics := &traceReceiver{}, &metricsReceiver{}
	tsrv, msrv := httptest.NewServer(traces), httptest.NewServer(metrics)
	defer tsrv.Close()
	defer msrv.Close()
	tel := setup(t, exportingEnv(tsrv.URL, msrv.URL))
	countDecision(t, tel)
	if body := scrape(t, tel); !strings.Contains(body, "fencegw_test_decisions_total") {
		t.Errorf("/metrics lacks fencegw_test_decisions_total:\n%s", body)
	}
	shutdown(t, tel) // flushes the periodic reader
	if got := metrics.received(); !strings.Contains(got, "fencegw.test.decisions") {
		t.Errorf("the OTLP metrics receiver got %q, want fencegw.test.decisions", got)
	}
}

// TestSDKDisabled: OTEL_SDK_DISABLED=true overrides an environment that
// exports and samples everything; spans still carry trace ids, the client's
// when it sent one, and OTEL_PROPAGATORS still applies.
func TestSDKDisabled(t *testing.T) {
	for _, v := range []string{"true", " TRUE "} {
		traces, metrics := &traceReceiver{}, &metricsReceiver{}
		tsrv, msrv := httptest.NewServer(traces), httptest.NewServer(metrics)
		env := exportingEnv(tsrv.URL, msrv.URL)
		env["OTEL_SDK_DISABLED"] = v
		env["OTEL_PROPAGATORS"] = "tracecontext"
		tel := setup(t, env)
		if tel.Exporting {
			t.Errorf("OTEL_SDK_DISABLED=%q: Exporting = true, want false", v)
		}
		_, root := tel.TracerProvider.Tracer("test").Start(context.Background(), "root")
		root.End()
		if sc := root.SpanContext(); !sc.IsValid() || sc.IsSampled() || root.IsRecording() {
			t.Errorf("OTEL_SDK_DISABLED=%q: root span valid %v sampled %v recording %v, want valid only",
				v, sc.IsValid(), sc.IsSampled(), root.IsRecording())
		}
		sc, bag, out := propagate(t, tel, propagation.MapCarrier{"traceparent": clientTraceparet, "baggage": "tenant=acme"})
		if sc.TraceID().String() != clientTraceID || bag.Len() != 0 || out["traceparent"] == "" || out["baggage"] != "" {
			t.Errorf("OTEL_SDK_DISABLED=%q: trace id %s, baggage %q, injected %v; want the client's trace, no baggage",
				v, sc.TraceID(), bag, out)
		}
		countDecision(t, tel)
		if body := scrape(t, tel); strings.Contains(body, "fencegw_test") {
			t.Errorf("OTEL_SDK_DISABLED=%q: /metrics serves a metric:\n%s", v, body)
		}
		emitSpan(context.Background(), tel)
		shutdown(t, tel)
		tsrv.Close()
		msrv.Close()
		if n, got := len(traces.requests()), metrics.received(); n != 0 || got != "" {
			t.Errorf("OTEL_SDK_DISABLED=%q: %d trace exports and metrics %q, want none", v, n, got)
		}
	}

	// Any other value leaves the SDK on.
	tel := setup(t, map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_TRACES_EXPORTER": "none", "OTEL_TRACES_SAMPLER": "always_on"})
	if _, span := tel.TracerProvider.Tracer("test").Start(context.Background(), "s"); !span.IsRecording() {
		t.Error("OTEL_SDK_DISABLED=false: the sampler from the environment is ignored")
	}
}

// TestIgnoreEnv: Options.IgnoreEnv exports nothing and samples no new trace
// whatever the environment, propagates W3C trace context and baggage, and
// serves metrics.
func TestIgnoreEnv(t *testing.T) {
	traces, metrics := &traceReceiver{}, &metricsReceiver{}
	tsrv, msrv := httptest.NewServer(traces), httptest.NewServer(metrics)
	defer tsrv.Close()
	defer msrv.Close()
	env := exportingEnv(tsrv.URL, msrv.URL)
	env["OTEL_PROPAGATORS"] = "b3"
	env["OTEL_SDK_DISABLED"] = "true"
	setenv(t, env)
	tel, err := Setup(context.Background(), Options{IgnoreEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	if tel.Exporting {
		t.Error("Exporting = true, want false")
	}
	_, root := tel.TracerProvider.Tracer("test").Start(context.Background(), "root")
	root.End()
	if sc := root.SpanContext(); !sc.IsValid() || sc.IsSampled() || root.IsRecording() {
		t.Errorf("root span valid %v sampled %v recording %v, want valid only", sc.IsValid(), sc.IsSampled(), root.IsRecording())
	}
	sc, bag, out := propagate(t, tel, propagation.MapCarrier{"traceparent": clientTraceparet, "baggage": "tenant=acme"})
	if sc.TraceID().String() != clientTraceID || bag.Member("tenant").Value() != "acme" ||
		!strings.Contains(out["traceparent"], clientTraceID) || out["baggage"] != "tenant=acme" {
		t.Errorf("trace id %s, baggage %q, injected %v; want W3C trace context and baggage", sc.TraceID(), bag, out)
	}
	countDecision(t, tel)
	if body := scrape(t, tel); !strings.Contains(body, "fencegw_test_decisions_total") {
		t.Errorf("/metrics lacks fencegw_test_decisions_total:\n%s", body)
	}
	emitSpan(context.Background(), tel)
	shutdown(t, tel)
	if n, got := len(traces.requests()), metrics.received(); n != 0 || got != "" {
		t.Errorf("%d trace exports and metrics %q, want none", n, got)
	}
}
