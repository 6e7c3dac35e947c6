package telemetry

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/contrib/propagators/autoprop"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// newSpanExporter returns the span exporter the environment selects, or nil
// when it selects none.
func newSpanExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	name := os.Getenv("OTEL_TRACES_EXPORTER")
	if name == "" && os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil, nil // autoexport would default to otlp, to localhost
	}
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdktrace.SpanExporter
	var err error
	if (name == "" || name == "otlp") && protocol == "http/json" {
		// autoexport refuses http/json, which otlptracehttp reads from the
		// environment and supports.
		exp, err = otlptracehttp.New(ctx)
	} else {
		exp, err = autoexport.NewSpanExporter(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: span exporter (OTEL_TRACES_EXPORTER=%q): %w", name, err)
	}
	if autoexport.IsNoneSpanExporter(exp) {
		return nil, nil
	}
	return exp, nil
}

// newTracerProvider builds the SDK tracer provider, with a batch span
// processor (configured by OTEL_BSP_*) when exp is not nil. The sampler is
// the SDK's reading of OTEL_TRACES_SAMPLER, unless useEnv is false or that
// variable is unset and nothing is exported: then new traces are not
// recorded, but a client's sampled trace stays sampled, so that the upstream
// sees the client's decision unchanged.
func newTracerProvider(res *resource.Resource, exp sdktrace.SpanExporter, useEnv bool) *sdktrace.TracerProvider {
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if exp != nil {
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	if !useEnv || exp == nil && strings.TrimSpace(os.Getenv("OTEL_TRACES_SAMPLER")) == "" {
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())))
	}
	return sdktrace.NewTracerProvider(opts...)
}

// newPropagator returns what OTEL_PROPAGATORS names with useEnv, else (and
// by default) W3C trace context and baggage.
func newPropagator(useEnv bool) propagation.TextMapPropagator {
	if useEnv {
		return autoprop.NewTextMapPropagator()
	}
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// disabled is the Telemetry of OTEL_SDK_DISABLED=true: a tracer provider
// that gives spans ids and exports nothing, no metrics, and the propagator
// OTEL_PROPAGATORS names, so that trace ids are still the clients'.
func disabled() *Telemetry {
	tp := newTracerProvider(resource.Empty(), nil, false)
	return &Telemetry{
		TracerProvider: tp,
		MeterProvider:  metricnoop.NewMeterProvider(),
		Propagator:     newPropagator(true),
		tp:             tp,
		registry:       prometheus.NewRegistry(),
	}
}
