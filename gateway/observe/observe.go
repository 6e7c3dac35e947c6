package observe

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/fencegw/fencegw/gateway/audit"
	"github.com/fencegw/fencegw/gateway/problem"
	"github.com/fencegw/fencegw/gateway/reqctx"

	"github.com/fencegw/fencegw/wire"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// Instrumentation names the gateway's tracer and meter.
const Instrumentation = "github.com/fencegw/fencegw/gateway"

// Span attributes and events of fencing decisions.
const (
	AttrResource       = attribute.Key("fencing.resource")
	AttrEpochPresented = attribute.Key("fencing.epoch.presented")
	AttrEpochCurrent   = attribute.Key("fencing.epoch.current")
	AttrHolder         = attribute.Key("fencing.holder")
	AttrRoute          = attribute.Key("fencing.route")
	AttrEpochSource    = attribute.Key("fencing.epoch_source")
	AttrDecision       = attribute.Key("fencing.decision")
	// EventStaleWriteRejected is added to the request's span when a stale
	// write is refused.
	EventStaleWriteRejected = "fencing.stale_write_rejected"
)

// Observer is what the gateway reports through OpenTelemetry: spans, the
// decision and lease metrics, and the audit of refusals. The zero value is
// not usable; NewObserver with nil providers observes nothing but the audit.
type Observer struct {
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	Propagator     propagation.TextMapPropagator
	// Audit records refusals and lease events in the durable audit; nil
	// records none.
	Audit *audit.Recorder
	// ResourceLabels adds the resource name to lease metrics. Off by
	// default: resource names are unbounded.
	ResourceLabels bool
	// Clock is the wall clock audit events are timed on (the system
	// clock when nil); see tokens.Clock.
	Clock tokens.Clock

	tracer             trace.Tracer
	decisions          metric.Int64Counter
	storeDuration      metric.Float64Histogram
	leaseGrants        metric.Int64Counter
	leaseTakeovers     metric.Int64Counter
	LeaseRenewFailures metric.Int64Counter
	LeaseReleases      metric.Int64Counter
	Idempotency        metric.Int64Counter
	http               *httpMetrics
	decisionSets       sync.Map // decisionKey -> attribute.Set
}

// NewObserver builds an Observer. Nil providers observe nothing; a nil
// propagator propagates W3C trace context and baggage. Set Audit to record
// the durable audit.
func NewObserver(tp trace.TracerProvider, mp metric.MeterProvider, prop propagation.TextMapPropagator) (*Observer, error) {
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	if prop == nil {
		prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	o := &Observer{TracerProvider: tp, MeterProvider: mp, Propagator: prop,
		tracer: tp.Tracer(Instrumentation)}
	m := mp.Meter(Instrumentation)
	var errs [8]error
	o.decisions, errs[0] = m.Int64Counter("fencegw.decisions",
		metric.WithDescription("Fencing decisions on fenced writes, by route and decision."))
	o.storeDuration, errs[1] = m.Float64Histogram("fencegw.store.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of store calls, by operation and outcome."),
		metric.WithExplicitBucketBoundaries(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5))
	o.leaseGrants, errs[2] = m.Int64Counter("fencegw.lease.grants", metric.WithDescription("Lease grants."))
	o.leaseTakeovers, errs[3] = m.Int64Counter("fencegw.lease.takeovers",
		metric.WithDescription("Lease grants that took a lease from another holder."))
	o.LeaseRenewFailures, errs[4] = m.Int64Counter("fencegw.lease.renew_failures",
		metric.WithDescription("Refused or failed lease renewals."))
	o.LeaseReleases, errs[5] = m.Int64Counter("fencegw.lease.releases", metric.WithDescription("Lease releases."))
	o.http, errs[6] = newHTTPMetrics(m)
	o.Idempotency, errs[7] = m.Int64Counter("fencegw.idempotency",
		metric.WithDescription("Fenced writes with an Idempotency-Key (or that needed one), by route and outcome: forwarded, replayed, in_flight, mismatch, not_replayable, freed, unknown, missing, invalid."))
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("gateway metrics: %w", err)
		}
	}
	return o, nil
}

// ChildSpan starts an internal child span of ctx's span when that span
// records; otherwise it returns ctx and its own non-recording span, which
// costs nothing (a parent-based sampler would not record the child either).
func (o *Observer) ChildSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	if parent := trace.SpanFromContext(ctx); !parent.IsRecording() {
		return ctx, parent
	}
	return o.tracer.Start(ctx, name)
}

// RecordDecision puts a fencing decision on the request's span, adds the
// stale-write event, and counts it. p is nil for an admission. Attributes
// are computed only for a span that records; the count's attribute set is
// built once per route and decision.
func (o *Observer) RecordDecision(r *http.Request, rt *policy.Route, a reqctx.Admission, p *problem.Problem) {
	d := tokens.DecisionAdmitted
	if p != nil {
		d = p.Decision()
	}
	if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
		span.SetName(r.Method + " " + rt.Prefix)
		attrs := decisionAttrs(rt, a, p, d)
		span.SetAttributes(attrs...)
		if d == tokens.DecisionStale {
			span.AddEvent(EventStaleWriteRejected, trace.WithAttributes(attrs...))
		}
	}
	o.decisions.Add(r.Context(), 1, metric.WithAttributeSet(o.decisionSet(rt, d)))
}

// sourceOf names what judged rt's epochs: its epoch source's kind, or
// "fence" for the gateway's own fence.
func sourceOf(rt *policy.Route) string {
	if rt.EpochSourceKind != "" {
		return rt.EpochSourceKind
	}
	return "fence"
}

// decisionAttrs are a decision's span attributes.
func decisionAttrs(rt *policy.Route, a reqctx.Admission, p *problem.Problem, d tokens.Decision) []attribute.KeyValue {
	attrs := []attribute.KeyValue{AttrRoute.String(rt.Name), AttrDecision.String(string(d)), semconv.HTTPRoute(rt.Prefix),
		AttrEpochSource.String(sourceOf(rt))}
	if a.Resource != "" {
		attrs = append(attrs, AttrResource.String(a.Resource))
	}
	if a.EpochPresented {
		attrs = append(attrs, AttrEpochPresented.Int64(a.Epoch))
	}
	if p != nil && p.CurrentEpoch != nil {
		attrs = append(attrs, AttrEpochCurrent.Int64(int64(*p.CurrentEpoch)))
	} else if p == nil && a.EpochPresented {
		attrs = append(attrs, AttrEpochCurrent.Int64(a.Epoch))
	}
	if a.Holder != "" {
		attrs = append(attrs, AttrHolder.String(a.Holder))
	}
	return attrs
}

// decisionKey names one attribute set of the decisions counter.
type decisionKey struct {
	route, source string
	decision      tokens.Decision
}

// decisionSet returns the counter's attribute set for rt and d, built
// once (routes and decisions are few): the route, the decision and what
// judged it (see sourceOf).
func (o *Observer) decisionSet(rt *policy.Route, d tokens.Decision) attribute.Set {
	k := decisionKey{rt.Name, sourceOf(rt), d}
	if s, ok := o.decisionSets.Load(k); ok {
		return s.(attribute.Set)
	}
	s := attribute.NewSet(attribute.String("route", k.route), attribute.String("decision", string(d)),
		attribute.String("epoch_source", k.source))
	o.decisionSets.Store(k, s)
	return s
}

// audit counts a refusal in the durable audit.
func (o *Observer) AuditRefusal(r *http.Request, a reqctx.Admission, p *problem.Problem) {
	if o == nil || o.Audit == nil {
		return
	}
	rej := wire.Rejection{Route: p.Route, Resource: p.Resource, PresentedEpoch: p.PresentedEpoch,
		CurrentEpoch: p.CurrentEpoch, Holder: a.Holder, Decision: string(p.Decision()), Status: p.Status}
	if rt, ok := reqctx.RouteFrom(r.Context()); ok {
		rej.EpochSource = rt.EpochSourceKind
	}
	if rej.Resource == "" {
		rej.Resource = a.Resource
	}
	o.Audit.Refused(o.Now(), rej, traceID(r.Context()))
}

// Now is the wall-clock time on o's Clock.
func (o *Observer) Now() time.Time {
	if o == nil {
		return tokens.SystemClock{}.Now()
	}
	return tokens.ClockOr(o.Clock).Now()
}

// LeaseHistory records a lease event in the durable audit.
func (o *Observer) LeaseHistory(ctx context.Context, at time.Time, event string, l tokens.Lease, previous *tokens.Lease) {
	if o.Audit != nil {
		o.Audit.Lease(at, event, l, previous, traceID(ctx))
	}
}

// traceID is the id of ctx's trace, or "".
func traceID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return sc.TraceID().String()
	}
	return ""
}

// LeaseGranted records a grant on the request's span — a takeover with the
// previous holder and epoch — and counts it.
func (o *Observer) LeaseGranted(ctx context.Context, g tokens.Grant) {
	o.LeaseEvent(ctx, "fencing.lease.granted", o.leaseGrants, g.Name, g.Holder, g.Epoch)
	if g.Previous != nil && g.Previous.Holder != g.Holder {
		o.LeaseEvent(ctx, "fencing.lease.takeover", o.leaseTakeovers, g.Name, g.Holder, g.Epoch,
			attribute.String("fencing.previous_holder", g.Previous.Holder),
			attribute.Int64("fencing.previous_epoch", g.Previous.Epoch),
			attribute.Bool("fencing.previous_held", g.Previous.Held))
	}
}

// LeaseEvent adds a lease event to the request's span and counts it; the
// lease name is a metric label only with ResourceLabels.
func (o *Observer) LeaseEvent(ctx context.Context, event string, counter metric.Int64Counter, name, holder string, epoch int64, extra ...attribute.KeyValue) {
	attrs := append([]attribute.KeyValue{AttrResource.String(name), AttrHolder.String(holder), AttrEpochPresented.Int64(epoch)}, extra...)
	trace.SpanFromContext(ctx).AddEvent(event, trace.WithAttributes(attrs...))
	if o.ResourceLabels {
		counter.Add(ctx, 1, metric.WithAttributes(attribute.String("lease", name)))
	} else {
		counter.Add(ctx, 1)
	}
}

// MustObserver returns an Observer that reports nothing; building it cannot
// fail.
func MustObserver() *Observer {
	o, err := NewObserver(nil, nil, nil)
	if err != nil {
		panic(err)
	}
	return o
}

// IdemOutcome counts a keyed write's outcome and notes it on the span.
func (o *Observer) IdemOutcome(ctx context.Context, rt *policy.Route, outcome string) {
	route := ""
	if rt != nil {
		route = rt.Name
	}
	o.Idempotency.Add(ctx, 1, metric.WithAttributes(attribute.String("route", route), attribute.String("outcome", outcome)))
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.String("fencing.idempotency", outcome))
	}
}
