package telemetry

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// newMeterProvider builds an SDK meter provider whose only reader is the
// OpenTelemetry Prometheus exporter, registered on a private registry.
func newMeterProvider(res *resource.Resource) (*sdkmetric.MeterProvider, *prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(
		otelprom.WithRegisterer(reg),
		// Explicit, so names cannot change under a dependency upgrade.
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: Prometheus exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res))
	return mp, reg, nil
}

// MetricsHandler serves the MeterProvider's metrics, and nothing else, in
// the Prometheus exposition formats (text unless the scraper negotiates
// another). Names are translated with underscore escaping and suffixes: dots
// become underscores, counters get _total, and a unit a suffix (unit "s"
// gives _seconds); the resource is exported as target_info, and each series
// carries otel_scope_name and friends. It gathers from the Telemetry's own
// registry, never prometheus.DefaultRegisterer.
func (t *Telemetry) MetricsHandler() http.Handler {
	if t.registry == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{})
}
