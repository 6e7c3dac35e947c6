package observe

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// recordsHandler keeps every record.
type recordsHandler struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *recordsHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordsHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordsHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordsHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r)
	return nil
}

// TestRefusalLogCapsAllKindsTogether: refusals of more kinds than the
// interval's budget log the budget in full, and the interval's end logs
// count lines — one per counted kind and one for the kinds beyond
// maxRefusalKinds — that account for every other refusal.
func TestRefusalLogCapsAllKindsTogether(t *testing.T) {
	h := &recordsHandler{}
	l := NewRefusalLog(slog.New(h), RefusalLogOptions{Interval: time.Hour, LinesPerSecond: 1}) // flushed by hand
	if l.budget != 3600 {
		t.Fatalf("budget %d, want 3600 lines an hour", l.budget)
	}
	l.budget = 10
	const kinds, each = 200, 5
	full := 0
	for i := range kinds * each {
		if l.Allow(fmt.Sprintf("route-%d", i%kinds), "stale", 412) {
			full++
		}
	}
	if full != 10 {
		t.Fatalf("%d refusals logged in full, want the budget of 10", full)
	}
	l.flush()
	var counted int64
	for _, r := range h.recs {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "count" {
				counted += a.Value.Int64()
			}
			return true
		})
	}
	if len(h.recs) > maxRefusalKinds+1 || int64(full)+counted != kinds*each {
		t.Fatalf("%d count lines counting %d; want at most %d lines counting %d", len(h.recs), counted, maxRefusalKinds+1, kinds*each-full)
	}
	// The next interval has a budget again.
	if !l.Allow("route-0", "stale", 412) {
		t.Fatal("a refusal after the flush was not logged in full")
	}
}

// TestNilRefusalLogAllowsAll: without a RefusalLog every line is logged.
func TestNilRefusalLogAllowsAll(t *testing.T) {
	var l *RefusalLog
	for range 3 {
		if !l.Allow("r", "stale", 412) {
			t.Fatal("a nil RefusalLog refused a line")
		}
	}
}
