package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// RefusalLogInterval is how long identical refusals are counted instead
// of logged one by one.
const RefusalLogInterval = time.Second

// maxRefusalKinds bounds the kinds of refusal counted in one interval;
// refusals of further kinds are counted together.
const maxRefusalKinds = 1024

// refusalLog logs refused writes so that a storm stays readable: the first
// refusal of a kind (route, decision, status, resource, epochs, holder) in
// an interval is logged at once and in full, with its trace; identical ones
// after it are counted, and the count is logged as one line when the
// interval ends. Spans, metrics and the audit still record every refusal.
type refusalLog struct {
	log      *slog.Logger
	interval time.Duration

	mu       sync.Mutex
	counts   map[refusalKind]int
	overflow int  // refusals of kinds beyond maxRefusalKinds this interval
	pending  bool // a flush is scheduled
}

// refusalKind is what makes two refusals the same for the log.
type refusalKind struct {
	route, decision, resource, holder string
	status                            int
	presented, current                int64
}

func newRefusalLog(log *slog.Logger, interval time.Duration) *refusalLog {
	return &refusalLog{log: log, interval: interval, counts: make(map[refusalKind]int)}
}

// refused logs (or counts) one refused write.
func (l *refusalLog) refused(r *http.Request, a Admission, p *Problem) {
	k := refusalKind{route: p.Route, decision: string(p.Decision()), resource: p.Resource, holder: a.Holder, status: p.Status}
	if p.PresentedEpoch != nil {
		k.presented = *p.PresentedEpoch
	}
	if p.CurrentEpoch != nil {
		k.current = *p.CurrentEpoch
	}
	l.mu.Lock()
	n, seen := l.counts[k]
	first := false
	switch {
	case seen:
		l.counts[k] = n + 1
	case len(l.counts) >= maxRefusalKinds:
		l.overflow++
	default:
		l.counts[k] = 0
		first = true
	}
	if !l.pending {
		l.pending = true
		time.AfterFunc(l.interval, l.flush)
	}
	l.mu.Unlock()
	if first {
		logRefusal(l.log, r, a, p)
	}
}

// flush logs the counts of the interval that ended and starts another.
func (l *refusalLog) flush() {
	l.mu.Lock()
	counts, overflow := l.counts, l.overflow
	l.counts, l.overflow, l.pending = make(map[refusalKind]int), 0, false
	l.mu.Unlock()
	ctx := context.Background()
	for k, n := range counts {
		if n == 0 {
			continue
		}
		level := slog.LevelInfo
		if k.status == http.StatusServiceUnavailable {
			level = slog.LevelWarn
		}
		attrs := []slog.Attr{slog.Int("count", n), slog.String("interval", l.interval.String()),
			slog.String("decision", k.decision), slog.String("route", k.route), slog.Int("status", k.status)}
		if k.resource != "" {
			attrs = append(attrs, slog.String("resource", k.resource))
		}
		if k.presented != 0 {
			attrs = append(attrs, slog.Int64("presented_epoch", k.presented))
		}
		if k.current != 0 {
			attrs = append(attrs, slog.Int64("current_epoch", k.current))
		}
		if k.holder != "" {
			attrs = append(attrs, slog.String("holder", k.holder))
		}
		l.log.LogAttrs(ctx, level, "fenced writes refused again", attrs...)
	}
	if overflow > 0 {
		l.log.LogAttrs(ctx, slog.LevelWarn, "fenced writes refused, of more kinds than are logged one by one",
			slog.Int("count", overflow), slog.String("interval", l.interval.String()))
	}
}
