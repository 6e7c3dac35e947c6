package telemetry

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// newMeterProvider builds an SDK meter provider whose readers are the
// OpenTelemetry Prometheus exporter, registered on a private registry, and,
// with useEnv, the one OTEL_METRICS_EXPORTER names (none when unset).
func newMeterProvider(ctx context.Context, res *resource.Resource, useEnv bool) (*sdkmetric.MeterProvider, *prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(
		otelprom.WithRegisterer(reg),
		// Explicit, so names cannot change under a dependency upgrade.
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: Prometheus exporter: %w", err)
	}
	opts := []sdkmetric.Option{sdkmetric.WithReader(exp), sdkmetric.WithResource(res)}
	if useEnv {
		r, err := autoexport.NewMetricReader(ctx, autoexport.WithFallbackMetricReader(
			func(context.Context) (sdkmetric.Reader, error) { return nil, nil }))
		if err != nil {
			return nil, nil, fmt.Errorf("telemetry: metric reader (OTEL_METRICS_EXPORTER): %w", err)
		}
		if r != nil && !autoexport.IsNoneMetricReader(r) {
			opts = append(opts, sdkmetric.WithReader(r))
		}
	}
	return sdkmetric.NewMeterProvider(opts...), reg, nil
}

// MetricsHandler serves the MeterProvider's metrics, and nothing else, in
// the Prometheus exposition formats (text unless the scraper negotiates
// another). Names are translated with underscore escaping and suffixes: dots
// become underscores, counters get _total, and a unit a suffix (unit "s"
// gives _seconds); the resource is exported as target_info, and each series
// carries otel_scope_name and friends. It gathers from the Telemetry's own
// registry, never prometheus.DefaultRegisterer. With OTEL_SDK_DISABLED=true
// it serves no metric.
func (t *Telemetry) MetricsHandler() http.Handler {
	if t.registry == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{})
}
