package telemetry

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

const (
	clientTraceID    = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientParentSpan = "00f067aa0ba902b7"
	clientTraceparet = "00-" + clientTraceID + "-" + clientParentSpan + "-01"
)

// recorder attaches a span recorder to tel's SDK tracer provider, to see
// what would reach an exporter.
func recorder(t *testing.T, tel *Telemetry) *tracetest.SpanRecorder {
	t.Helper()
	tp, ok := tel.TracerProvider.(*sdktrace.TracerProvider)
	if !ok {
		t.Fatalf("TracerProvider is %T, want *sdktrace.TracerProvider", tel.TracerProvider)
	}
	sr := tracetest.NewSpanRecorder()
	tp.RegisterSpanProcessor(sr)
	return sr
}

func TestNoneHasTraceIDs(t *testing.T) {
	for name, vars := range map[string]map[string]string{
		"nothing set":   {},
		"explicit none": {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
	} {
		t.Run(name, func(t *testing.T) {
			tel := setup(t, vars)
			if tel.Exporting {
				t.Error("Exporting = true, want false")
			}
			sr := recorder(t, tel)
			tr := tel.TracerProvider.Tracer("test")

			_, root := tr.Start(context.Background(), "root")
			if sc := root.SpanContext(); !sc.IsValid() || sc.IsSampled() || root.IsRecording() {
				t.Errorf("root span: valid %v sampled %v recording %v, want valid, unsampled, not recording",
					sc.IsValid(), sc.IsSampled(), root.IsRecording())
			}
			root.End()
			_, root2 := tr.Start(context.Background(), "root")
			root2.End()
			if root2.SpanContext().TraceID() == root.SpanContext().TraceID() {
				t.Error("two roots share a trace id")
			}

			// A client's traceparent and baggage, as the gateway extracts them.
			in := propagation.MapCarrier{"traceparent": clientTraceparet, "baggage": "tenant=acme"}
			ctx := tel.Propagator.Extract(context.Background(), in)
			if got := baggage.FromContext(ctx).Member("tenant").Value(); got != "acme" {
				t.Errorf("extracted baggage tenant = %q, want acme", got)
			}
			ctx, child := tr.Start(ctx, "child", trace.WithSpanKind(trace.SpanKindServer))
			csc := child.SpanContext()
			// The client sampled its trace: the decision is kept for the
			// upstream, though nothing is exported.
			if csc.TraceID().String() != clientTraceID || !csc.IsValid() || !csc.IsSampled() {
				t.Errorf("child: trace id %s valid %v sampled %v, want %s, valid, sampled",
					csc.TraceID(), csc.IsValid(), csc.IsSampled(), clientTraceID)
			}
			child.End()
			if csc.SpanID().String() == clientParentSpan {
				t.Error("child reuses the client's span id")
			}

			// What the upstream receives.
			out := propagation.MapCarrier{}
			tel.Propagator.Inject(ctx, out)
			if want := "00-" + clientTraceID + "-" + csc.SpanID().String() + "-01"; out["traceparent"] != want {
				t.Errorf("injected traceparent = %q, want %q", out["traceparent"], want)
			}
			if out["baggage"] != "tenant=acme" {
				t.Errorf("injected baggage = %q, want tenant=acme", out["baggage"])
			}

			for _, s := range sr.Ended() {
				if s.SpanContext().TraceID().String() != clientTraceID {
					t.Errorf("a span of a new trace was recorded: %s", s.Name())
				}
			}
		})
	}
}

func TestNoneWithExplicitSampler(t *testing.T) {
	tel := setup(t, map[string]string{"OTEL_TRACES_SAMPLER": "always_on"})
	if tel.Exporting {
		t.Error("Exporting = true, want false")
	}
	_, span := tel.TracerProvider.Tracer("test").Start(context.Background(), "s")
	defer span.End()
	if !span.IsRecording() || !span.SpanContext().IsSampled() {
		t.Error("with OTEL_TRACES_SAMPLER=always_on and no exporter, span is not sampled")
	}
}

func TestSamplerFromEnv(t *testing.T) {
	rec := &traceReceiver{}
	srv := httptest.NewServer(rec)
	defer srv.Close()

	for _, tc := range []struct {
		sampler, arg string
		// whether a root span, and a child of the client's sampled
		// traceparent, are sampled
		root, child bool
	}{
		{"traceidratio", "0", false, false},
		{"TraceIdRatio", " 0.0 ", false, false},
		{"parentbased_traceidratio", "0", false, true},
		{"parentbased_always_off", "", false, true},
		{"always_off", "", false, false},
		{"always_on", "", true, true},
		{"", "", true, true}, // default parentbased_always_on
		{"traceidratio", "", true, true},
		{"traceidratio", "1", true, true},
	} {
		tel := setup(t, map[string]string{
			"OTEL_TRACES_EXPORTER":        "otlp",
			"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL,
			"OTEL_TRACES_SAMPLER":         tc.sampler,
			"OTEL_TRACES_SAMPLER_ARG":     tc.arg,
		})
		tr := tel.TracerProvider.Tracer("test")
		_, root := tr.Start(context.Background(), "root")
		ctx := tel.Propagator.Extract(context.Background(), propagation.MapCarrier{"traceparent": clientTraceparet})
		_, child := tr.Start(ctx, "child")

		for _, s := range []struct {
			name string
			span trace.Span
			want bool
		}{{"root", root, tc.root}, {"child", child, tc.child}} {
			sc := s.span.SpanContext()
			if !sc.IsValid() {
				t.Errorf("%s=%q: %s span context invalid", tc.sampler, tc.arg, s.name)
			}
			if sc.IsSampled() != s.want || s.span.IsRecording() != s.want {
				t.Errorf("%s=%q: %s sampled %v recording %v, want %v",
					tc.sampler, tc.arg, s.name, sc.IsSampled(), s.span.IsRecording(), s.want)
			}
			s.span.End()
		}
		if child.SpanContext().TraceID().String() != clientTraceID {
			t.Errorf("%s=%q: child trace id %s, want the client's", tc.sampler, tc.arg, child.SpanContext().TraceID())
		}

		before := len(rec.spans())
		shutdown(t, tel)
		want := 0
		for _, b := range []bool{tc.root, tc.child} {
			if b {
				want++
			}
		}
		if got := len(rec.spans()) - before; got != want {
			t.Errorf("%s=%q: exported %d spans, want %d", tc.sampler, tc.arg, got, want)
		}
	}
}

func TestBadEnv(t *testing.T) {
	for _, tc := range []struct {
		vars    map[string]string
		wantVar string
	}{
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin-v9"}, "OTEL_TRACES_EXPORTER"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "jaeger"}, "OTEL_TRACES_EXPORTER"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp,none"}, "OTEL_TRACES_EXPORTER"},
		// autoexport takes one exporter name, in lower case.
		{map[string]string{"OTEL_TRACES_EXPORTER": "console,otlp"}, "OTEL_TRACES_EXPORTER"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "Console"}, "OTEL_TRACES_EXPORTER"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon"}, "OTEL_TRACES_EXPORTER"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "carrier-pigeon"}, "OTEL_TRACES_EXPORTER"},
		{map[string]string{"OTEL_METRICS_EXPORTER": "carrier-pigeon"}, "OTEL_METRICS_EXPORTER"},
	} {
		setenv(t, tc.vars)
		tel, err := Setup(context.Background(), Options{})
		if err == nil {
			shutdown(t, tel)
			t.Errorf("%v: Setup succeeded, want an error naming %s", tc.vars, tc.wantVar)
			continue
		}
		if !strings.Contains(err.Error(), tc.wantVar) {
			t.Errorf("%v: Setup error %q, want one naming %s", tc.vars, err, tc.wantVar)
		}
	}

	// Values the packages reading them report through otel.Handle or their
	// logger, and replace by the setting's default.
	for _, vars := range []map[string]string{
		{"OTEL_TRACES_SAMPLER": "sometimes"},
		{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1.5"},
		{"OTEL_BSP_SCHEDULE_DELAY": "soon", "OTEL_BSP_MAX_QUEUE_SIZE": "-1"},
		{"OTEL_RESOURCE_ATTRIBUTES": "a=b%2Cc, ,d = e ,deployment.environment"},
		{"OTEL_PROPAGATORS": "carrier-pigeon"},
		{"OTEL_SDK_DISABLED": "maybe"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:4318", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s",
			"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"},
	} {
		setenv(t, vars)
		tel, err := Setup(context.Background(), Options{})
		if err != nil {
			t.Errorf("%v: Setup: %v", vars, err)
			continue
		}
		shutdown(t, tel)
	}
}

func TestShutdown(t *testing.T) {

	t.Run("idempotent", func(t *testing.T) {
		rec := &traceReceiver{}
		srv := httptest.NewServer(rec)
		defer srv.Close()
		tel := setup(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})
		emitSpan(context.Background(), tel)
		shutdown(t, tel)
		shutdown(t, tel)
		emitSpan(context.Background(), tel) // after Shutdown: dropped
		if n := len(rec.spans()); n != 1 {
			t.Errorf("receiver got %d spans, want 1", n)
		}
	})

	t.Run("bounded by ctx", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select { // a receiver that does not answer
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		defer close(release)
		setenv(t, map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL,
			"OTEL_EXPORTER_OTLP_TIMEOUT":  "2000",
			"OTEL_BSP_EXPORT_TIMEOUT":     "2000",
		})
		tel, err := Setup(context.Background(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		emitSpan(context.Background(), tel)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		err = tel.Shutdown(ctx)
		if elapsed := time.Since(start); elapsed > time.Second {
			t.Errorf("Shutdown took %v with a 200ms context", elapsed)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown = %v, want context.DeadlineExceeded", err)
		}
		if err2 := tel.Shutdown(context.Background()); err2 != err {
			t.Errorf("second Shutdown = %v, want the first's %v", err2, err)
		}
	})
}
