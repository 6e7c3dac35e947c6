package telemetry

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// Attribute keys LogHandler adds.
const (
	LogKeyTraceID = "trace_id"
	LogKeySpanID  = "span_id"
)

// LogHandler wraps h so that every record handled with a context carrying a
// valid span context (sampled or not) gets the attributes trace_id and
// span_id, as lowercase hex, after its own attributes. Records without one
// pass through unchanged. Like any record attribute, the two land in the
// innermost group opened with WithGroup, so open no group on a logger whose
// ids must stay at the top level. Wrapping a handler returned by LogHandler
// again returns it unchanged.
func LogHandler(h slog.Handler) slog.Handler {
	if lh, ok := h.(*logHandler); ok {
		return lh
	}
	return &logHandler{inner: h}
}

type logHandler struct{ inner slog.Handler }

func (l *logHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return l.inner.Enabled(ctx, level)
}

func (l *logHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			// Clone: copies of a Record share their attributes.
			r = r.Clone()
			r.AddAttrs(
				slog.String(LogKeyTraceID, sc.TraceID().String()),
				slog.String(LogKeySpanID, sc.SpanID().String()),
			)
		}
	}
	return l.inner.Handle(ctx, r)
}

func (l *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logHandler{inner: l.inner.WithAttrs(attrs)}
}

func (l *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{inner: l.inner.WithGroup(name)}
}
