package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/observe"

	"github.com/fencegw/fencegw/wire"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/tokens"
)

// failingSource stands for an external election that cannot answer.
type failingSource struct{}

func (failingSource) Check(context.Context, string, int64) error { return errors.New("source down") }

type observed struct {
	spans   *tracetest.SpanRecorder
	metrics *sdkmetric.ManualReader
	tp      *sdktrace.TracerProvider
	mp      *sdkmetric.MeterProvider
}

func newObserved(t *testing.T) *observed {
	o := &observed{spans: tracetest.NewSpanRecorder(), metrics: sdkmetric.NewManualReader()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(o.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(o.metrics))
	t.Cleanup(func() { tp.Shutdown(context.Background()); mp.Shutdown(context.Background()) })
	o.tp, o.mp = tp, mp
	return o
}

// counts sums the int64 counter name's data points by the value of their
// attribute key.
func (o *observed) counts(t *testing.T, name string, key attribute.Key) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := o.metrics.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				v, _ := dp.Attributes.Value(key)
				counts[v.AsString()] += dp.Value
			}
		}
	}
	return counts
}

// serverSpan finds the proxy's server span of a trace. The span ends just
// after the answer is sent, so it may arrive a moment after the client read
// the answer: wait for it (bounded).
func (o *observed) serverSpan(t *testing.T, traceID string) sdktrace.ReadOnlySpan {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, s := range o.spans.Ended() {
			if s.SpanContext().TraceID().String() == traceID && s.SpanKind() == trace.SpanKindServer {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no server span in trace %s", traceID)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// traceparent makes a client trace context header for a fresh trace id.
func traceparent(n int) (header, traceID string) {
	traceID = fmt.Sprintf("4bf92f3577b34da6a3ce929d%08x", n+1)
	return "00-" + traceID + "-00f067aa0ba902b7-01", traceID
}

// TestDecisionsOnSpans checks the span attributes, event, metrics, audit and
// problem trace id of every kind of decision.
func TestDecisionsOnSpans(t *testing.T) {
	o := newObserved(t)
	up := newUpstream(t)
	g := newGatewayWith(t, boltFresh(t)(t), up, gatewayOptions{observed: o,
		sources: map[string]tokensEpochSource{"/sourced/": failingSource{}}},
		append(leaseRoutes, routeSpec{prefix: "/sourced/", resource: "elsewhere"})...)
	leaseOf(t, g.acquire(t, "invoice-sweeper", "node-a", 15))
	lease := leaseOf(t, g.acquire(t, "invoice-sweeper", "node-a", 15)) // epoch 2: 1 is stale
	other := leaseOf(t, g.acquire(t, "report", "node-x", 15))
	forged := lease.Token[:len(lease.Token)-4] + "AAAA"

	cases := []struct {
		name, path, token string
		status            int
		decision          string
		want              map[attribute.Key]any
	}{
		{"admitted", "/signed/x", lease.Token, 201, "admitted", map[attribute.Key]any{
			"fencing.resource": "invoice-sweeper", "fencing.epoch.presented": int64(lease.Epoch), "fencing.epoch.current": int64(lease.Epoch),
			"fencing.holder": "node-a", "fencing.route": "/signed/"}},
		{"stale", "/raw/x", strconv.FormatInt(int64(lease.Epoch)-1, 10), 412, "stale", map[attribute.Key]any{
			"fencing.resource": "invoice-sweeper", "fencing.epoch.presented": int64(lease.Epoch) - 1, "fencing.epoch.current": int64(lease.Epoch)}},
		{"missing", "/raw/x", "", 428, "missing", map[attribute.Key]any{"fencing.route": "/raw/"}},
		{"invalid", "/raw/x", "abc", 400, "invalid", nil},
		{"forbidden, never issued", "/raw/x", strconv.FormatInt(int64(lease.Epoch)+5, 10), 403, "forbidden",
			map[attribute.Key]any{"fencing.epoch.presented": int64(lease.Epoch) + 5, "fencing.epoch.current": int64(lease.Epoch)}},
		{"forbidden, other resource", "/bound/x", other.Token, 403, "forbidden", map[attribute.Key]any{"fencing.holder": "node-x"}},
		{"forged", "/signed/x", forged, 401, "forged", nil},
		{"unavailable", "/sourced/x", "3", 503, "unavailable", map[attribute.Key]any{"fencing.resource": "elsewhere"}},
	}
	for i, c := range cases {
		tp, traceID := traceparent(i)
		h := map[string]string{"traceparent": tp, "baggage": "tenant=42"}
		if c.token != "" {
			h[gateway.TokenHeader] = c.token
		}
		a := do(t, "POST", g.proxy.URL+c.path, h, "x")
		if a.status != c.status {
			t.Fatalf("%s: %d %s", c.name, a.status, a.body)
		}
		if c.status != 201 {
			if p := a.problem(t); p["trace_id"] != traceID {
				t.Fatalf("%s: problem trace_id %v, want the client's %s", c.name, p["trace_id"], traceID)
			}
		}
		s := o.serverSpan(t, traceID)
		got := attrs(s)
		if got["fencing.decision"].AsString() != c.decision {
			t.Fatalf("%s: decision %v, attrs %v", c.name, got["fencing.decision"], got)
		}
		if s.Name() != "POST "+c.path[:strings.LastIndex(c.path, "/")+1] {
			t.Errorf("%s: span name %q", c.name, s.Name())
		}
		if s.Parent().SpanID().String() != "00f067aa0ba902b7" {
			t.Errorf("%s: server span's parent %s is not the client's span", c.name, s.Parent().SpanID())
		}
		for k, want := range c.want {
			v, ok := got[k]
			if !ok || v.AsInterface() != want {
				t.Errorf("%s: %s = %v, want %v", c.name, k, v.AsInterface(), want)
			}
		}
		var stale bool
		for _, e := range s.Events() {
			stale = stale || e.Name == observe.EventStaleWriteRejected
		}
		if stale != (c.decision == "stale") {
			t.Errorf("%s: stale event present = %v", c.name, stale)
		}
	}
	// The admitted write reached the upstream inside the client's trace,
	// through a client span, with the baggage.
	r := up.requests()[0]
	_, firstTrace := traceparent(0)
	if tp := r.Header.Get("traceparent"); !strings.Contains(tp, firstTrace) || strings.Contains(tp, "00f067aa0ba902b7") {
		t.Fatalf("upstream traceparent %q: want trace %s through the gateway's client span", tp, firstTrace)
	}
	if r.Header.Get("baggage") != "tenant=42" {
		t.Fatalf("upstream baggage %q", r.Header.Get("baggage"))
	}
	o.serverSpan(t, firstTrace) // all of the first trace's spans ended before its server span
	var client, check bool
	for _, s := range o.spans.Ended() {
		if s.SpanContext().TraceID().String() == firstTrace {
			client = client || s.SpanKind() == trace.SpanKindClient
			check = check || s.Name() == "fencing.check"
		}
	}
	if !client || !check {
		t.Fatalf("admitted trace has client span %v, fencing.check span %v", client, check)
	}

	// Metrics count decisions by route and decision.
	counts := o.counts(t, "fencegw.decisions", "decision")
	if counts["stale"] != 1 || counts["admitted"] != 1 || counts["forbidden"] != 2 || counts["unavailable"] != 1 {
		t.Fatalf("decision counts = %v", counts)
	}
	// The write through the route with an epoch source was judged by it
	// (its harness kind), the others by the gateway's fence.
	if by := o.counts(t, "fencegw.decisions", "epoch_source"); len(by) != 2 || by["kubernetes"] != 1 || by["fence"] != 7 {
		t.Errorf("decisions by epoch_source = %v, want 1 by kubernetes and 7 by fence", by)
	}

	// The audit lists every refusal, with its trace, once written.
	g.flushAudit(t)
	var list wire.Rejections
	if err := json.Unmarshal(do(t, "GET", g.api.URL+"/v1/audit/rejections?limit=100", nil, "").body, &list); err != nil {
		t.Fatal(err)
	}
	decisions := map[tokens.Decision]int64{}
	for _, rej := range list.Rejections {
		decisions[tokens.Decision(rej.Decision)] += rej.Count
	}
	if len(list.Rejections) != len(cases)-1 || decisions["stale"] != 1 || decisions["unavailable"] != 1 || decisions["forbidden"] != 2 {
		t.Fatalf("audit = %+v", list.Rejections)
	}
	_, staleTrace := traceparent(1)
	var found bool
	for _, rej := range list.Rejections {
		if rej.Decision == "stale" {
			found = slices.Equal(rej.TraceIDs, []string{staleTrace}) && rej.Resource == "invoice-sweeper" &&
				*rej.CurrentEpoch == lease.Epoch && rej.Replica != "" && rej.Count == 1
		}
	}
	if !found {
		t.Fatalf("audit lacks the stale write of trace %s: %+v", staleTrace, list.Rejections)
	}
	var only wire.Rejections
	json.Unmarshal(do(t, "GET", g.api.URL+"/v1/audit/rejections?resource=elsewhere", nil, "").body, &only)
	if len(only.Rejections) != 1 {
		t.Fatalf("audit filtered by resource = %+v", only.Rejections)
	}
	if a := do(t, "GET", g.api.URL+"/v1/audit/rejections?limit=0", nil, ""); a.status != http.StatusBadRequest {
		t.Fatalf("limit=0 = %d", a.status)
	}
}

// TestLeaseEventsOnSpans: grants, takeovers, renew failures and releases
// are span events of the control API's requests.
func TestLeaseEventsOnSpans(t *testing.T) {
	o := newObserved(t)
	g := newGatewayWith(t, boltFresh(t)(t), newUpstream(t), gatewayOptions{observed: o}, leaseRoutes...)
	a := leaseOf(t, g.acquire(t, "jobs", "node-a", 1))
	g.releaseLease(t, "jobs", "node-a", int64(a.Epoch))
	b := leaseOf(t, g.acquire(t, "jobs", "node-b", 15))
	g.renewLease(t, "jobs", "node-a", int64(a.Epoch))
	// Server spans end just after their answers: wait (bounded) for all.
	var (
		events   map[string]trace.SpanKind
		takeover map[attribute.Key]attribute.Value
	)
	deadline := time.Now().Add(10 * time.Second)
	for len(events) < 4 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		events = map[string]trace.SpanKind{}
		for _, s := range o.spans.Ended() {
			for _, e := range s.Events() {
				events[e.Name] = s.SpanKind()
				if e.Name == "fencing.lease.takeover" {
					takeover = map[attribute.Key]attribute.Value{}
					for _, kv := range e.Attributes {
						takeover[kv.Key] = kv.Value
					}
				}
			}
		}
	}
	for _, s := range o.spans.Ended() {
		if s.SpanKind() == trace.SpanKindServer && !strings.HasPrefix(s.Name(), "POST /v1/leases/{name}/") &&
			!strings.HasPrefix(s.Name(), "GET ") {
			t.Errorf("control span name %q", s.Name())
		}
	}
	for _, e := range []string{"fencing.lease.granted", "fencing.lease.takeover", "fencing.lease.released", "fencing.lease.renew_failed"} {
		if _, ok := events[e]; !ok {
			t.Errorf("no %s event; events %v", e, events)
		}
	}
	if takeover["fencing.previous_holder"].AsString() != "node-a" || takeover["fencing.previous_epoch"].AsInt64() != int64(a.Epoch) ||
		takeover["fencing.epoch.presented"].AsInt64() != int64(b.Epoch) {
		t.Fatalf("takeover event = %v", takeover)
	}
}
