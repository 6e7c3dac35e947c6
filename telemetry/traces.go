package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Exporter names accepted in OTEL_TRACES_EXPORTER.
const (
	exporterOTLP    = "otlp"
	exporterConsole = "console"
	exporterNone    = "none"
)

// traceConfig is everything the environment says about traces.
type traceConfig struct {
	exporters []string // otlp and/or console, without duplicates; empty for none
	sampler   sdktrace.Sampler
	bsp       []sdktrace.BatchSpanProcessorOption
	otlp      otlpConfig
}

// readTraces reads and validates the traces variables.
func readTraces(e env) (traceConfig, error) {
	var c traceConfig
	var err error
	if c.exporters, err = readExporters(e); err != nil {
		return c, err
	}
	if c.sampler, err = readSampler(e, len(c.exporters) > 0); err != nil {
		return c, err
	}
	if c.bsp, err = readBSP(e); err != nil {
		return c, err
	}
	if c.otlp, err = readOTLP(e); err != nil {
		return c, err
	}
	return c, nil
}

// readExporters reads OTEL_TRACES_EXPORTER. Unlike the specification's
// default (otlp), an unset variable means none unless an OTLP endpoint is
// set, so that an unconfigured gateway exports nothing.
func readExporters(e env) ([]string, error) {
	v := e.get(envTracesExporter)
	if v == "" {
		if ep, _ := e.otlp("ENDPOINT"); ep != "" {
			return []string{exporterOTLP}, nil
		}
		return nil, nil
	}
	var names []string
	none := false
	for item := range strings.SplitSeq(v, ",") {
		name := strings.ToLower(strings.TrimSpace(item))
		switch name {
		case exporterOTLP, exporterConsole:
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		case exporterNone:
			none = true
		default:
			return nil, &EnvError{Var: envTracesExporter, Err: oneOf("exporter", name, exporterOTLP, exporterConsole, exporterNone)}
		}
	}
	if none && len(names) > 0 {
		return nil, &EnvError{Var: envTracesExporter, Err: errors.New("none cannot be combined with other exporters")}
	}
	return names, nil
}

// readSampler reads OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG. When
// the sampler is unset it is parentbased_always_on if spans are exported and
// always_off if not. The SDK would read these variables itself, but only
// from the process environment and silently falling back on bad values.
func readSampler(e env, exporting bool) (sdktrace.Sampler, error) {
	name := strings.ToLower(e.get(envTracesSampler))
	ratio := func() (sdktrace.Sampler, error) {
		arg := e.get(envTracesSamplerArg)
		if arg == "" {
			return sdktrace.TraceIDRatioBased(1), nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil {
			return nil, &EnvError{Var: envTracesSamplerArg, Err: fmt.Errorf("not a number: %w", err)}
		}
		if !(r >= 0 && r <= 1) {
			return nil, &EnvError{Var: envTracesSamplerArg, Err: fmt.Errorf("ratio %v is outside [0, 1]", r)}
		}
		return sdktrace.TraceIDRatioBased(r), nil
	}
	switch name {
	case "":
		if exporting {
			return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
		}
		// Nothing is exported: new traces are not recorded, but a client's
		// sampled trace stays sampled, so the upstream sees the client's
		// sampling decision unchanged.
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "traceidratio":
		return ratio()
	case "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "parentbased_traceidratio":
		s, err := ratio()
		if err != nil {
			return nil, err
		}
		return sdktrace.ParentBased(s), nil
	default:
		return nil, &EnvError{Var: envTracesSampler, Err: oneOf("sampler", name,
			"always_on", "always_off", "traceidratio",
			"parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio")}
	}
}

// readBSP reads the OTEL_BSP_* variables into a complete set of batch span
// processor options, so that the SDK's own reading of the process
// environment is always overridden.
func readBSP(e env) ([]sdktrace.BatchSpanProcessorOption, error) {
	delay, ok, err := e.millis(envBSPScheduleDelay, false)
	if err != nil {
		return nil, err
	}
	if !ok {
		delay = sdktrace.DefaultScheduleDelay * time.Millisecond
	}
	// 0 means no limit, as in the SDK.
	timeout, ok, err := e.millis(envBSPExportTimeout, true)
	if err != nil {
		return nil, err
	}
	if !ok {
		timeout = sdktrace.DefaultExportTimeout * time.Millisecond
	}
	queue, ok, err := e.count(envBSPMaxQueueSize, false)
	if err != nil {
		return nil, err
	}
	if !ok {
		queue = sdktrace.DefaultMaxQueueSize
	}
	batch, ok, err := e.count(envBSPMaxExportBatch, false)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		batch = min(sdktrace.DefaultMaxExportBatchSize, queue)
	case batch > queue:
		return nil, &EnvError{Var: envBSPMaxExportBatch, Err: fmt.Errorf("%d exceeds the queue size %d", batch, queue)}
	}
	return []sdktrace.BatchSpanProcessorOption{
		sdktrace.WithBatchTimeout(delay),
		sdktrace.WithExportTimeout(timeout),
		sdktrace.WithMaxQueueSize(queue),
		sdktrace.WithMaxExportBatchSize(batch),
	}, nil
}

// newTracerProvider builds the SDK tracer provider: one batch span processor
// per exporter, none at all when nothing is exported.
func newTracerProvider(ctx context.Context, c traceConfig, res *resource.Resource) (*sdktrace.TracerProvider, error) {
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithSampler(c.sampler)}
	var exps []sdktrace.SpanExporter
	for _, name := range c.exporters {
		exp, err := newSpanExporter(ctx, name, c.otlp)
		if err != nil {
			for _, started := range exps {
				err = errors.Join(err, started.Shutdown(ctx))
			}
			return nil, err
		}
		exps = append(exps, exp)
	}
	for _, exp := range exps {
		opts = append(opts, sdktrace.WithSpanProcessor(sdktrace.NewBatchSpanProcessor(exp, c.bsp...)))
	}
	return sdktrace.NewTracerProvider(opts...), nil
}

// newSpanExporter builds the exporter called name.
func newSpanExporter(ctx context.Context, name string, o otlpConfig) (sdktrace.SpanExporter, error) {
	switch name {
	case exporterOTLP:
		return newOTLPExporter(ctx, o)
	case exporterConsole:
		// One JSON object per span and line on standard output, taken now
		// (the package's default is os.Stdout as it was at init).
		exp, err := stdouttrace.New(stdouttrace.WithWriter(os.Stdout))
		if err != nil {
			return nil, fmt.Errorf("telemetry: console span exporter: %w", err)
		}
		return exp, nil
	}
	return nil, fmt.Errorf("telemetry: unknown span exporter %q", name) // unreachable: readExporters
}
