package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestLogHandler(t *testing.T) {
	tel := setup(t, nil) // nothing exported: ids must be there all the same
	var buf bytes.Buffer
	h := LogHandler(slog.NewJSONHandler(&buf, nil))
	if LogHandler(h) != h {
		t.Error("LogHandler wraps its own handler twice")
	}
	logger := slog.New(h).With("component", "test")

	ctx, span := tel.TracerProvider.Tracer("test").Start(context.Background(), "request")
	defer span.End()
	sc := span.SpanContext()

	logger.InfoContext(ctx, "refused", "route", "/email/")
	logger.InfoContext(context.Background(), "no span")
	logger.InfoContext(trace.ContextWithSpanContext(context.Background(), trace.SpanContext{}), "invalid span context")
	logger.Info("no context")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d log lines, want 4:\n%s", len(lines), buf.String())
	}
	for i, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, l)
		}
		if rec["component"] != "test" {
			t.Errorf("line %d lost the logger's attributes: %s", i, l)
		}
		if i == 0 {
			if rec["trace_id"] != sc.TraceID().String() || rec["span_id"] != sc.SpanID().String() || rec["route"] != "/email/" {
				t.Errorf("line %d = %s, want trace_id %s span_id %s", i, l, sc.TraceID(), sc.SpanID())
			}
			continue
		}
		if _, ok := rec["trace_id"]; ok {
			t.Errorf("line %d has a trace_id without a span: %s", i, l)
		}
		if _, ok := rec["span_id"]; ok {
			t.Errorf("line %d has a span_id without a span: %s", i, l)
		}
	}
}
