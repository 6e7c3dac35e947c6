package observe

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/fencegw/fencegw/gateway/problem"
)

// RefusalLogInterval is how long refusals of one kind are counted instead
// of logged one by one: the throttle's window.
const RefusalLogInterval = time.Second

// DefaultRefusalLinesPerSecond caps the refusals logged in full per second,
// all kinds together.
const DefaultRefusalLinesPerSecond = 20

// maxRefusalKinds bounds the kinds of refusal counted in one interval (and
// so the count lines logged when it ends); refusals of further kinds are
// counted together.
const maxRefusalKinds = 64

// RefusalLogOptions tune a RefusalLog.
type RefusalLogOptions struct {
	// Interval is the throttle's window (RefusalLogInterval when 0).
	Interval time.Duration
	// LinesPerSecond caps the refusals logged in full, all kinds
	// together (DefaultRefusalLinesPerSecond when 0).
	LinesPerSecond int
}

// RefusalLog keeps the log readable under a storm of refusals, from the
// proxy and the control API alike: in each interval, the first refusal of
// a kind — its route, decision and status, never its epochs, resource or
// holder, which a storm varies at will — is logged in full, with its
// trace, as long as the interval's line budget (LinesPerSecond × Interval,
// all kinds together) lasts. Every other refusal is counted, and when the
// interval ends each kind with a count is one "refusals suppressed" line
// (route, decision, status, count). So an interval logs at most its budget
// plus maxRefusalKinds+1 count lines, whatever the flood. Spans, metrics
// and the audit still record every refusal. A RefusalLog is safe for
// concurrent use; it runs no goroutine between storms (a timer flushes an
// interval that saw refusals).
type RefusalLog struct {
	log      *slog.Logger
	interval time.Duration
	budget   int // full lines per interval

	mu       sync.Mutex
	lines    int                 // full lines logged this interval
	counts   map[refusalKind]int // suppressed refusals this interval, by kind
	overflow int                 // suppressed refusals of kinds beyond maxRefusalKinds
	pending  bool                // a flush is scheduled
}

// refusalKind is what makes two refusals the same for the log.
type refusalKind struct {
	route, decision string
	status          int
}

// NewRefusalLog returns a RefusalLog that writes to log.
func NewRefusalLog(log *slog.Logger, o RefusalLogOptions) *RefusalLog {
	if o.Interval <= 0 {
		o.Interval = RefusalLogInterval
	}
	if o.LinesPerSecond <= 0 {
		o.LinesPerSecond = DefaultRefusalLinesPerSecond
	}
	budget := int(float64(o.LinesPerSecond) * o.Interval.Seconds())
	return &RefusalLog{log: log, interval: o.Interval, budget: max(budget, 1), counts: make(map[refusalKind]int)}
}

// Allow reports whether a refusal of route, decision and status may be
// logged in full now; when it may not, the refusal is counted for the
// interval's count lines. A nil RefusalLog allows every line.
func (l *RefusalLog) Allow(route, decision string, status int) bool {
	if l == nil {
		return true
	}
	k := refusalKind{route: route, decision: decision, status: status}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.pending {
		l.pending = true
		time.AfterFunc(l.interval, l.flush)
	}
	n, seen := l.counts[k]
	switch {
	case !seen && l.lines < l.budget && len(l.counts) < maxRefusalKinds:
		l.counts[k] = 0 // the kind's first line this interval
		l.lines++
		return true
	case seen:
		l.counts[k] = n + 1
	case len(l.counts) < maxRefusalKinds:
		l.counts[k] = 1
	default:
		l.overflow++
	}
	return false
}

// Logger is where the lines go: slog.Default() for a nil RefusalLog.
func (l *RefusalLog) Logger() *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l.log
}

// flush logs the counts of the interval that ended and starts another.
func (l *RefusalLog) flush() {
	l.mu.Lock()
	counts, overflow := l.counts, l.overflow
	l.counts, l.overflow, l.lines, l.pending = make(map[refusalKind]int), 0, 0, false
	l.mu.Unlock()
	ctx := context.Background()
	every := l.interval.String()
	for k, n := range counts {
		if n == 0 {
			continue
		}
		level := slog.LevelInfo
		if k.status >= http.StatusInternalServerError {
			level = slog.LevelWarn
		}
		l.log.LogAttrs(ctx, level, "refusals suppressed", slog.Int("count", n), slog.String("interval", every),
			slog.String("route", k.route), slog.String("decision", k.decision), slog.Int("status", k.status))
	}
	if overflow > 0 {
		l.log.LogAttrs(ctx, slog.LevelWarn, "refusals suppressed, of more kinds than are counted one by one",
			slog.Int("count", overflow), slog.String("interval", every))
	}
}

// ProblemDecision names a problem's kind for the refusal log: its fencing
// decision, or else its problem type's last part (lease-lost, upstream).
func ProblemDecision(p *problem.Problem) string {
	if d := p.Decision(); d != "" {
		return string(d)
	}
	return p.Type[strings.LastIndexByte(p.Type, ':')+1:]
}
