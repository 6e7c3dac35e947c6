package telemetry

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/fencegw/fencegw/internal/testleak"
)

// TestMain fails the package if goroutines outlive the tests. Exporters'
// background goroutines (batch span processors, gRPC transports, HTTP
// keep-alive connections closed by the receivers' Close) end shortly after
// Shutdown, so the check retries for a few seconds instead of ignoring any.
func TestMain(m *testing.M) { testleak.Exit(m.Run(), 5*time.Second) }

// getenv returns a lookup in vars, standing in for the process environment.
func getenv(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

// setup calls Setup with vars as the environment and shuts the result down
// when the test ends.
func setup(t testing.TB, vars map[string]string) *Telemetry {
	t.Helper()
	tel, err := Setup(context.Background(), Options{Getenv: getenv(vars), ServiceVersion: "v0.0.0-test"})
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tel.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return tel
}

// shutdown shuts tel down, failing the test on error.
func shutdown(t testing.TB, tel *Telemetry) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// emitSpan starts and ends a span shaped like a refused stale write.
func emitSpan(ctx context.Context, tel *Telemetry) trace.SpanContext {
	tr := tel.TracerProvider.Tracer("github.com/fencegw/fencegw/telemetry/test")
	_, span := tr.Start(ctx, "POST /email/", trace.WithSpanKind(trace.SpanKindServer))
	span.SetAttributes(attribute.String("fencing.decision", "stale"))
	span.AddEvent("fencing.stale_write_rejected", trace.WithAttributes(attribute.Int64("fencing.epoch.current", 7)))
	span.End()
	return span.SpanContext()
}
