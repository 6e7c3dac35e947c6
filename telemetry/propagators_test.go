package telemetry

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// propagate extracts in with tel's propagator, starts a server span under
// it, and returns what the propagator injects for that span.
func propagate(t *testing.T, tel *Telemetry, in propagation.MapCarrier) (trace.SpanContext, baggage.Baggage, propagation.MapCarrier) {
	t.Helper()
	ctx := tel.Propagator.Extract(context.Background(), in)
	ctx, span := tel.TracerProvider.Tracer("test").Start(ctx, "server", trace.WithSpanKind(trace.SpanKindServer))
	defer span.End()
	out := propagation.MapCarrier{}
	tel.Propagator.Inject(ctx, out)
	return span.SpanContext(), baggage.FromContext(ctx), out
}

func TestPropagators(t *testing.T) {
	client := propagation.MapCarrier{
		"traceparent": clientTraceparet,
		"b3":          clientTraceID + "-" + clientParentSpan + "-1",
		"baggage":     "tenant=acme",
	}

	t.Run("tracecontext only: no baggage", func(t *testing.T) {
		tel := setup(t, map[string]string{"OTEL_PROPAGATORS": "tracecontext"})
		sc, bag, out := propagate(t, tel, client)
		if sc.TraceID().String() != clientTraceID {
			t.Errorf("trace id %s, want the client's %s", sc.TraceID(), clientTraceID)
		}
		if bag.Len() != 0 {
			t.Errorf("baggage %q extracted, want none", bag)
		}
		if want := "00-" + clientTraceID + "-" + sc.SpanID().String() + "-01"; out["traceparent"] != want {
			t.Errorf("injected traceparent %q, want %q", out["traceparent"], want)
		}
		if v, ok := out["baggage"]; ok {
			t.Errorf("injected baggage %q, want none", v)
		}
	})

	t.Run("b3 only", func(t *testing.T) {
		tel := setup(t, map[string]string{"OTEL_PROPAGATORS": "b3"})
		sc, bag, out := propagate(t, tel, client)
		if sc.TraceID().String() != clientTraceID || !sc.IsSampled() {
			t.Errorf("trace id %s sampled %v, want the client's %s, sampled", sc.TraceID(), sc.IsSampled(), clientTraceID)
		}
		if bag.Len() != 0 {
			t.Errorf("baggage %q extracted, want none", bag)
		}
		if want := clientTraceID + "-" + sc.SpanID().String() + "-1"; out["b3"] != want {
			t.Errorf("injected b3 %q, want %q", out["b3"], want)
		}
		if len(out) != 1 {
			t.Errorf("injected %v, want only b3", out)
		}

		// A W3C traceparent alone is not understood: a new trace starts.
		sc, _, _ = propagate(t, tel, propagation.MapCarrier{"traceparent": clientTraceparet})
		if !sc.IsValid() || sc.TraceID().String() == clientTraceID {
			t.Errorf("with b3 only, traceparent gave trace id %s (valid %v), want a new one", sc.TraceID(), sc.IsValid())
		}
	})

	t.Run("none", func(t *testing.T) {
		tel := setup(t, map[string]string{"OTEL_PROPAGATORS": "none"})
		sc, bag, out := propagate(t, tel, client)
		if !sc.IsValid() || sc.TraceID().String() == clientTraceID || bag.Len() != 0 || len(out) != 0 {
			t.Errorf("with none: trace id %s (valid %v), baggage %q, injected %v; want a new trace, nothing propagated",
				sc.TraceID(), sc.IsValid(), bag, out)
		}
	})
}
