// Package telemetry is fencegw's OpenTelemetry wiring: it builds a tracer
// provider, a meter provider exposed to Prometheus, and the W3C propagator
// from the standard OTEL_* environment variables, and hands them back for
// explicit injection.
//
// The package keeps no global state: it never calls otel.SetTracerProvider,
// otel.SetMeterProvider or otel.SetTextMapPropagator, and it never registers
// anything with the default Prometheus registry. (The OpenTelemetry SDK itself
// still reports internal errors through otel.Handle, the global error handler.)
//
// # Environment
//
// Setup does not use go.opentelemetry.io/contrib/exporters/autoexport, which
// reads only the process environment. It reads every variable it interprets
// through Options.Getenv and turns the values into explicit SDK and exporter
// options, which take precedence over those packages' own reading of the
// process environment. With the default Getenv (os.Getenv) both sources are
// the same. With an injected Getenv, the process environment can still
// contribute what Setup does not interpret or cannot override: the span
// limits (OTEL_SPAN_*_LIMIT, OTEL_ATTRIBUTE_*_LIMIT), the OTEL_GO_X_*
// experiments, resource attributes from the process's own
// OTEL_RESOURCE_ATTRIBUTES / OTEL_SERVICE_NAME for keys Setup did not set
// (the SDK merges resource.Environment() under every resource it is given),
// gzip compression for OTLP/gRPC (which has no explicit "none" option), and
// certificate files for a plaintext endpoint.
//
// Interpreted variables (values are trimmed; enumerations are
// case-insensitive):
//
//   - OTEL_TRACES_EXPORTER: a comma-separated list of otlp and console, or
//     none. When unset, otlp if OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, else none.
//   - OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL: grpc, http/protobuf (default) or
//     http/json.
//   - OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT: an http:// or https:// URL. The
//     general endpoint is a base URL (OTLP/HTTP appends /v1/traces); the
//     traces endpoint is used as is. Default http://localhost:4318 (HTTP) or
//     http://localhost:4317 (gRPC). The scheme decides TLS.
//   - OTEL_EXPORTER_OTLP_[TRACES_]INSECURE: true forces plaintext.
//   - OTEL_EXPORTER_OTLP_[TRACES_]HEADERS, _TIMEOUT (milliseconds),
//     _COMPRESSION (gzip or none), _CERTIFICATE, _CLIENT_CERTIFICATE and
//     _CLIENT_KEY (PEM files).
//   - OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG: always_on, always_off,
//     traceidratio, parentbased_always_on, parentbased_always_off,
//     parentbased_traceidratio (ratio in [0, 1], default 1). When unset,
//     parentbased_always_on if spans are exported, else always_off.
//   - OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_EXPORT_TIMEOUT (milliseconds),
//     OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE.
//   - OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
//
// Every interpreted variable is validated whether or not its value ends up
// used (an OTEL_EXPORTER_OTLP_<X> overridden by its TRACES_ counterpart is
// ignored, not validated); a value Setup cannot use makes it fail with an
// *EnvError naming the variable. OTEL_PROPAGATORS, OTEL_SDK_DISABLED and
// the metrics and logs exporter variables are not interpreted.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
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
	// Getenv looks up environment variables; nil means os.Getenv. Tests
	// inject a map lookup so they need not touch the process environment.
	Getenv func(string) string
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
	// MeterProvider is never nil; its metrics are served by MetricsHandler.
	MeterProvider metric.MeterProvider
	// Propagator injects and extracts W3C traceparent/tracestate and W3C
	// baggage.
	Propagator propagation.TextMapPropagator
	// Exporting reports whether spans leave the process (OTLP or console).
	Exporting bool

	tp       *sdktrace.TracerProvider
	mp       *sdkmetric.MeterProvider
	registry *prometheus.Registry

	shutdownOnce sync.Once
	shutdownErr  error
}

// EnvError reports an environment variable whose value Setup cannot use.
// Its message names the variable; it never repeats a header value.
type EnvError struct {
	Var string // the variable's name, e.g. "OTEL_TRACES_EXPORTER"
	Err error  // what is wrong with its value
}

// Error returns "telemetry: <Var>: <Err>".
// Error returns "telemetry: VAR: problem".
func (e *EnvError) Error() string { return "telemetry: " + e.Var + ": " + e.Err.Error() }

// Unwrap returns e.Err.
func (e *EnvError) Unwrap() error { return e.Err }

// Setup builds fencegw's telemetry from o and the OTEL_* environment
// variables described in the package documentation. It validates the whole
// environment before starting anything, and returns an *EnvError (possibly
// wrapped) naming the first variable it cannot use. It contacts no
// collector: exporters connect lazily. ctx bounds only the construction.
//
// The caller owns the result and must call Shutdown to flush spans.
func Setup(ctx context.Context, o Options) (*Telemetry, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	e := env(getenv)

	resAttrs, err := readResource(e, o)
	if err != nil {
		return nil, err
	}
	tc, err := readTraces(e)
	if err != nil {
		return nil, err
	}

	res, err := newResource(ctx, resAttrs)
	if err != nil {
		return nil, err
	}
	tp, err := newTracerProvider(ctx, tc, res)
	if err != nil {
		return nil, err
	}
	mp, reg, err := newMeterProvider(res)
	if err != nil {
		return nil, errors.Join(err, tp.Shutdown(ctx))
	}
	return &Telemetry{
		TracerProvider: tp,
		MeterProvider:  mp,
		Propagator:     propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		Exporting:      len(tc.exporters) > 0,
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

// resourceAttrs are the resource values read from Options and the
// environment, highest precedence last.
type resourceAttrs struct {
	defaults    []attribute.KeyValue // from Options
	fromEnv     []attribute.KeyValue // OTEL_RESOURCE_ATTRIBUTES
	serviceName string               // OTEL_SERVICE_NAME
}

// readResource reads the resource's service identity and
// OTEL_RESOURCE_ATTRIBUTES without building anything.
func readResource(e env, o Options) (resourceAttrs, error) {
	name := o.ServiceName
	if name == "" {
		name = DefaultServiceName
	}
	r := resourceAttrs{defaults: []attribute.KeyValue{semconv.ServiceName(name)}}
	if o.ServiceVersion != "" {
		r.defaults = append(r.defaults, semconv.ServiceVersion(o.ServiceVersion))
	}
	attrs, err := parseResourceAttributes(e.get(envResourceAttributes))
	if err != nil {
		return r, &EnvError{Var: envResourceAttributes, Err: err}
	}
	r.fromEnv = attrs
	r.serviceName = e.get(envServiceName)
	return r, nil
}

// newResource describes this process: telemetry SDK, host, a few cheap
// process attributes (not the command line, which may hold secrets, nor the
// owner, which needs a user lookup), then r in increasing precedence.
func newResource(ctx context.Context, r resourceAttrs) (*resource.Resource, error) {
	opts := []resource.Option{
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithOSType(),
		resource.WithProcessPID(),
		resource.WithProcessExecutableName(),
		resource.WithProcessRuntimeName(),
		resource.WithProcessRuntimeVersion(),
		resource.WithProcessRuntimeDescription(),
		resource.WithAttributes(r.defaults...),
		resource.WithAttributes(r.fromEnv...),
	}
	if r.serviceName != "" {
		opts = append(opts, resource.WithAttributes(semconv.ServiceName(r.serviceName)))
	}
	res, err := resource.New(ctx, opts...)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry: build resource: %w", err)
	}
	// A partial resource (say, no host name) is still worth having.
	return res, nil
}
