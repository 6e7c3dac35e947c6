package telemetry

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/fencegw/fencegw/internal/testutil/testleak"
)

// TestMain fails the package if goroutines outlive the tests. Exporters'
// background goroutines (batch span processors, gRPC transports, HTTP
// keep-alive connections closed by the receivers' Close) end shortly after
// Shutdown, so the check retries for a few seconds instead of ignoring any.
func TestMain(m *testing.M) { testleak.Exit(m.Run(), 5*time.Second) }

// setenv makes vars the OTEL_* environment of the process for the rest of
// the test: every other OTEL_* variable is unset. Tests that call it cannot
// run in parallel.
func setenv(t testing.TB, vars map[string]string) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OTEL_") {
			t.Setenv(k, "") // restored when the test ends
			os.Unsetenv(k)
		}
	}
	for k, v := range vars {
		t.Setenv(k, v)
	}
}

// setup calls Setup with vars as the OTEL_* environment and shuts the
// result down when the test ends.
func setup(t testing.TB, vars map[string]string) *Telemetry {
	t.Helper()
	setenv(t, vars)
	tel, err := Setup(context.Background(), Options{ServiceVersion: "v0.0.0-test"})
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
