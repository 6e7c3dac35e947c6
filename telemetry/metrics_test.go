package telemetry

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// scrape GETs tel's metrics handler.
func scrape(t *testing.T, tel *Telemetry) string {
	t.Helper()
	w := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if w.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", w.Code, w.Body)
	}
	b, _ := io.ReadAll(w.Result().Body)
	return string(b)
}

func TestMetricsHandler(t *testing.T) {
	tel := setup(t, map[string]string{"OTEL_SERVICE_NAME": "fencegw-metrics"})
	other := setup(t, nil) // a second Telemetry in the same process
	counter, err := tel.MeterProvider.Meter("github.com/fencegw/fencegw/telemetry/test").
		Int64Counter("fencegw.test.decisions", metric.WithDescription("Fencing decisions."))
	if err != nil {
		t.Fatal(err)
	}
	counter.Add(context.Background(), 1, metric.WithAttributes(attribute.String("decision", "stale")))
	hist, err := tel.MeterProvider.Meter("github.com/fencegw/fencegw/telemetry/test").
		Float64Histogram("fencegw.test.store.duration", metric.WithUnit("s"))
	if err != nil {
		t.Fatal(err)
	}
	hist.Record(context.Background(), 0.002, metric.WithAttributes(attribute.String("operation", "check")))

	body := scrape(t, tel)
	var line string
	for l := range strings.SplitSeq(body, "\n") {
		if strings.HasPrefix(l, "fencegw_test_decisions_total{") {
			line = l
		}
	}
	if !strings.Contains(line, `decision="stale"`) || !strings.HasSuffix(line, " 1") {
		t.Errorf("no fencegw_test_decisions_total{decision=\"stale\"} 1 in:\n%s", body)
	}
	if !strings.Contains(body, "# TYPE fencegw_test_decisions_total counter") {
		t.Errorf("counter type missing:\n%s", body)
	}
	if !strings.Contains(body, `fencegw_test_store_duration_seconds_count{operation="check"`) {
		t.Errorf("histogram with unit s not exported as fencegw_test_store_duration_seconds:\n%s", body)
	}
	if !strings.Contains(body, `service_name="fencegw-metrics"`) {
		t.Errorf("target_info lacks service_name=\"fencegw-metrics\":\n%s", body)
	}

	if strings.Contains(scrape(t, other), "fencegw_test_decisions") {
		t.Error("a second Telemetry serves the first one's metrics")
	}
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "fencegw_test") || mf.GetName() == "target_info" {
			t.Errorf("default registry holds %s", mf.GetName())
		}
	}
}
