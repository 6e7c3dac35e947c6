// Package telemetry is fencegw's OpenTelemetry wiring: it builds a tracer
// provider, a meter provider exposed to Prometheus, and a propagator from
// the standard OTEL_* environment variables, and hands them back for
// explicit injection.
//
// The package keeps no global state: it never calls otel.SetTracerProvider,
// otel.SetMeterProvider or otel.SetTextMapPropagator, and it never registers
// anything with the default Prometheus registry. (The OpenTelemetry packages
// still report internal errors, such as a value they cannot parse, through
// otel.Handle and their internal logger.)
//
// # Environment
//
// Setup itself reads only OTEL_SDK_DISABLED, and whether a few variables are
// set, to choose defaults. The rest is read by
// go.opentelemetry.io/contrib/exporters/autoexport,
// go.opentelemetry.io/contrib/propagators/autoprop, the OTLP and console
// exporters and the SDK, as each of them documents:
//
//   - OTEL_SDK_DISABLED: true (in any case) exports, samples and measures
//     nothing and ignores the other variables except OTEL_PROPAGATORS;
//     spans still carry trace ids, as when nothing is exported.
//   - OTEL_TRACES_EXPORTER: one of otlp, console and none (autoexport takes
//     a single name). Unset means otlp when OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, else none, so that an
//     unconfigured gateway exports nothing.
//   - OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL: grpc, http/protobuf (default)
//     or http/json; OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, _INSECURE,
//     _HEADERS, _TIMEOUT, _COMPRESSION, _CERTIFICATE, _CLIENT_CERTIFICATE
//     and _CLIENT_KEY as the OTLP exporters read them.
//   - OTEL_METRICS_EXPORTER: otlp, console, prometheus or none (the
//     default here): a metric reader in addition to MetricsHandler, with
//     OTEL_EXPORTER_OTLP_[METRICS_]* (grpc or http/protobuf only) and
//     OTEL_METRIC_EXPORT_*.
//   - OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, read by the SDK.
//     Unset means parentbased_always_on when spans are exported, else
//     parentbased_always_off.
//   - OTEL_BSP_*, OTEL_SPAN_*_LIMIT and the other SDK variables.
//   - OTEL_PROPAGATORS: a comma-separated list of tracecontext, baggage,
//     b3, b3multi, jaeger, xray and ottrace, or none; default
//     tracecontext,baggage.
//   - OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
//
// Setup fails on an exporter name or OTLP protocol it cannot use. Other
// bad values are reported by the package reading them, through otel.Handle
// or its logger, and that setting keeps its default.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// DefaultServiceName is the service.name used when neither
// Options.ServiceName nor the environment names the service.
const DefaultServiceName = "fencegw"

// Options are the values Setup takes from the program rather than from the
// environment. The zero value is ready to use.
type Options struct {
	// ServiceName is the resource's service.name; empty means
	// DefaultServiceName. OTEL_RESOURCE_ATTRIBUTES (service.name=...) and,
	// above it, OTEL_SERVICE_NAME override it.
	ServiceName string
	// ServiceVersion is the resource's service.version, omitted when empty.
	// OTEL_RESOURCE_ATTRIBUTES overrides it.
	ServiceVersion string
	// IgnoreEnv makes Setup export nothing and sample no new trace whatever
	// the environment: it reads no OTEL_* variable (OTEL_SDK_DISABLED
	// included) and propagates W3C trace context and baggage. Metrics are
	// still served by MetricsHandler, and spans still carry trace ids.
	IgnoreEnv bool
}

// Telemetry holds the providers built by Setup. Obtain it from Setup only,
// and call Shutdown before the process exits. Its methods are safe for
// concurrent use.
type Telemetry struct {
	// TracerProvider is never nil. When nothing is exported it samples
	// nothing (unless OTEL_TRACES_SAMPLER says otherwise), so its spans are
	// non-recording and cheap, yet they carry valid trace and span ids: a
	// root span gets a fresh trace id, a span under a remote parent keeps
	// the parent's.
	TracerProvider trace.TracerProvider
	// MeterProvider is never nil; its metrics are served by MetricsHandler
	// (a no-op when OTEL_SDK_DISABLED is true).
	MeterProvider metric.MeterProvider
	// Propagator injects and extracts what OTEL_PROPAGATORS names, by
	// default W3C traceparent/tracestate and W3C baggage.
	Propagator propagation.TextMapPropagator
	// Exporting reports whether spans leave the process (OTLP or console).
	Exporting bool

	tp       *sdktrace.TracerProvider
	mp       *sdkmetric.MeterProvider // nil when OTEL_SDK_DISABLED is true
	registry *prometheus.Registry

	shutdownOnce sync.Once
	shutdownErr  error
}

// Setup builds fencegw's telemetry from o and the OTEL_* environment
// variables described in the package documentation. It contacts no
// collector: exporters connect lazily (OTEL_METRICS_EXPORTER=prometheus
// opens its listener, though). ctx bounds only the construction.
//
// The caller owns the result and must call Shutdown to flush spans.
func Setup(ctx context.Context, o Options) (*Telemetry, error) {
	useEnv := !o.IgnoreEnv
	if useEnv && strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return disabled(), nil
	}
	res := newResource(ctx, o, useEnv)
	var exp sdktrace.SpanExporter
	var err error
	if useEnv {
		if exp, err = newSpanExporter(ctx); err != nil {
			return nil, err
		}
	}
	tp := newTracerProvider(res, exp, useEnv)
	mp, reg, err := newMeterProvider(ctx, res, useEnv)
	if err != nil {
		return nil, errors.Join(err, tp.Shutdown(ctx))
	}
	return &Telemetry{
		TracerProvider: tp,
		MeterProvider:  mp,
		Propagator:     newPropagator(useEnv),
		Exporting:      exp != nil,
		tp:             tp,
		mp:             mp,
		registry:       reg,
	}, nil
}

// Shutdown flushes and exports the spans still queued, shuts the exporters
// and the meter provider down, and returns when done or when ctx ends,
// whichever is first (an ended ctx makes it return ctx's error, and spans
// not yet exported are lost). Only the first call does the work; later calls
// return its result. Spans started afterwards are not recorded.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	t.shutdownOnce.Do(func() {
		var errs []error
		if t.tp != nil {
			if err := t.tp.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("telemetry: shut down tracer provider: %w", err))
			}
		}
		if t.mp != nil {
			if err := t.mp.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("telemetry: shut down meter provider: %w", err))
			}
		}
		t.shutdownErr = errors.Join(errs...)
	})
	return t.shutdownErr
}

// newResource describes this process: telemetry SDK, host, a few cheap
// process attributes (not the command line, which may hold secrets, nor the
// owner, which needs a user lookup), the service from o, and then, with
// useEnv, OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME.
func newResource(ctx context.Context, o Options, useEnv bool) *resource.Resource {
	name := o.ServiceName
	if name == "" {
		name = DefaultServiceName
	}
	opts := []resource.Option{
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithOSType(),
		resource.WithProcessPID(),
		resource.WithProcessExecutableName(),
		resource.WithProcessRuntimeName(),
		resource.WithProcessRuntimeVersion(),
		resource.WithProcessRuntimeDescription(),
		resource.WithAttributes(semconv.ServiceName(name)),
	}
	if o.ServiceVersion != "" {
		opts = append(opts, resource.WithAttributes(semconv.ServiceVersion(o.ServiceVersion)))
	}
	if useEnv {
		opts = append(opts, resource.WithFromEnv())
	}
	res, err := resource.New(ctx, opts...)
	if err != nil {
		// Detectors fail only partially (a malformed OTEL_RESOURCE_ATTRIBUTES
		// item, no host name): what they found is still worth having.
		otel.Handle(fmt.Errorf("telemetry: resource: %w", err))
	}
	return res
}
