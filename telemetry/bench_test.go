package telemetry

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// BenchmarkStartSpanNone compares starting and ending a span with nothing
// configured (exporter none: sampled away, but with real ids) against the
// no-op tracer, which does nothing at all.
func BenchmarkStartSpanNone(b *testing.B) {
	tel := setup(b, nil)
	for _, bc := range []struct {
		name string
		tp   trace.TracerProvider
	}{
		{"none", tel.TracerProvider},
		{"noop", noop.NewTracerProvider()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tr := bc.tp.Tracer("bench")
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				_, span := tr.Start(ctx, "span")
				span.End()
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			tr := bc.tp.Tracer("bench")
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, span := tr.Start(ctx, "span")
					span.End()
				}
			})
		})
	}
}
