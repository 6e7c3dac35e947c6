package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/fencegw/fencegw/wire"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"

	"github.com/fencegw/fencegw/tokens"
)

// Defaults of Options.
const (
	DefaultAuditInterval   = 10 * time.Second
	DefaultAuditFlush      = time.Second
	DefaultAuditMaxPending = 10000
	// DefaultAuditJunkMaxPending bounds the junk class in memory (its
	// entries are per route and reason, so few are needed).
	DefaultAuditJunkMaxPending = 1000
)

// Options tune a Recorder.
type Options struct {
	// Replica names this gateway in the entries it records.
	Replica string
	// Interval is how long identical events are counted as one entry
	// (DefaultAuditInterval when 0).
	Interval time.Duration
	// Flush is how often changed entries are written to the store
	// (DefaultAuditFlush when 0).
	Flush time.Duration
	// MaxPending bounds the history's entries held in memory (lease
	// events and refusals of a presented token): those of intervals still
	// open and those not yet written (DefaultAuditMaxPending when 0). An
	// event that needs a new entry beyond it is dropped and counted in
	// fencegw.audit.dropped.
	MaxPending int
	// JunkMaxPending bounds, apart, the entries of refusals of writes
	// that presented no token or one that does not parse
	// (DefaultAuditJunkMaxPending when 0): junk never takes history's
	// room.
	JunkMaxPending int
	// StoreTimeout bounds one write (5s when 0).
	StoreTimeout time.Duration
	Logger       *slog.Logger
	// MeterProvider counts dropped events and failed writes (none when
	// nil).
	MeterProvider metric.MeterProvider
	// Clock is the wall clock the events' times are read on, which
	// decides when an interval has ended (the system clock when nil).
	Clock tokens.Clock
}

// Recorder records refused writes and lease events in the durable
// audit (tokens.AuditStore) without slowing or failing a request: an event
// only updates an entry in memory; Run writes the changed entries to the
// store every Flush, in batches of tokens.AuditBatch, yielding between
// them so that lease and HWM writes never wait behind a whole flush.
//
// Events are of two classes with budgets of their own: history (lease
// events, refusals of a presented token) and junk (refusals of writes
// without a token or with one that does not parse). Junk is counted per
// route, decision and status, without the resource, in the tokens.AuditJunk
// log: a flood of junk names is a few entries, and never drops history.
//
// While the store cannot be written, counts keep adding up in memory and
// are written once it can; events that would need memory beyond their
// class's budget are dropped and counted in the fencegw.audit.dropped
// metric, never silently.
//
// Each entry counts identical events of one replica (one process: its
// entries' IDs include a random boot id) over one interval, and is written
// whole, so a retried write counts nothing twice.
type Recorder struct {
	store   tokens.AuditStore
	o       Options
	boot    string
	dropped metric.Int64Counter
	failed  metric.Int64Counter

	flushMu sync.Mutex // one flush at a time

	mu      sync.Mutex
	entries map[auditKey]*auditSlot
	junk    int  // entries of the junk class
	failing bool // the last write failed (its failure was logged)
}

// auditKey is what makes events the same entry: the fields an entry's ID
// digests, kept as they are so that counting an event into an entry that
// exists costs no digest.
type auditKey struct {
	stream                        tokens.AuditStream
	start                         int64 // the interval's start, Unix nanoseconds
	resource, kind, holder, route string
	epoch, current                int64
	// hasEpoch, hasCurrent: a refusal's epoch and current are known (they
	// may be 0).
	hasEpoch, hasCurrent bool
	status               int
	// at tells apart lease events that are never counted together.
	at string
	// shared: the entry is the same whichever replica records it (a lapse).
	shared bool
}

// id returns the entry ID of k, recorded by replica in process boot.
func (k auditKey) id(boot, replica string) string {
	start := time.Unix(0, k.start)
	fields := []string{string(k.stream), k.resource, k.kind, k.holder, k.route, epochField(k.epoch, k.hasEpoch),
		epochField(k.current, k.hasCurrent), strconv.Itoa(k.status), k.at}
	if k.shared {
		return tokens.AuditID(start, fields...)
	}
	return tokens.AuditID(start, append(fields, boot, replica)...)
}

// epochField is an epoch as an entry's ID digests it: its digits, "0"
// also when unknown (as IDs always had it), and "=0" for a known 0, so
// that a refusal at epoch 0 and one without an epoch are entries of their
// own.
func epochField(epoch int64, known bool) string {
	if known && epoch == 0 {
		return "=0"
	}
	return strconv.FormatInt(epoch, 10)
}

// auditSlot is an entry in memory; dirty when it changed since it was last
// written.
type auditSlot struct {
	e     tokens.AuditEntry
	dirty bool
	end   time.Time // when its interval ends
}

// NewRecorder returns a recorder writing to store. Call Run to write.
func NewRecorder(store tokens.AuditStore, o Options) (*Recorder, error) {
	if o.Interval <= 0 {
		o.Interval = DefaultAuditInterval
	}
	if o.Flush <= 0 {
		o.Flush = DefaultAuditFlush
	}
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultAuditMaxPending
	}
	if o.JunkMaxPending <= 0 {
		o.JunkMaxPending = DefaultAuditJunkMaxPending
	}
	if o.StoreTimeout <= 0 {
		o.StoreTimeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MeterProvider == nil {
		o.MeterProvider = metricnoop.NewMeterProvider()
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("audit boot id: %w", err)
	}
	a := &Recorder{store: store, o: o, boot: hex.EncodeToString(b[:]), entries: make(map[auditKey]*auditSlot)}
	m := o.MeterProvider.Meter(auditInstrumentation)
	var err1, err2 error
	a.dropped, err1 = m.Int64Counter("fencegw.audit.dropped",
		metric.WithDescription("Refusals and lease events the durable audit could not keep in memory while its entries waited to be written, by stream."))
	a.failed, err2 = m.Int64Counter("fencegw.audit.write_failures",
		metric.WithDescription("Writes of audit entries to the store that failed (they are retried)."))
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("audit metrics: %w", errors.Join(err1, err2))
	}
	return a, nil
}

// Refused counts a refused write.
func (a *Recorder) Refused(at time.Time, rej wire.Rejection, traceID string) {
	var presented, current int64
	if rej.PresentedEpoch != nil {
		presented = int64(*rej.PresentedEpoch)
	}
	if rej.CurrentEpoch != nil {
		current = int64(*rej.CurrentEpoch)
	}
	start := at.Truncate(a.o.Interval)
	k := auditKey{stream: tokens.AuditRefusals, start: start.UnixNano(), resource: rej.Resource, kind: string(rej.Decision),
		holder: rej.Holder, route: rej.Route, epoch: presented, current: current, status: rej.Status,
		hasEpoch: rej.PresentedEpoch != nil, hasCurrent: rej.CurrentEpoch != nil}
	if IsJunk(tokens.Decision(rej.Decision)) {
		k = auditKey{stream: tokens.AuditJunk, start: start.UnixNano(), kind: string(rej.Decision), route: rej.Route,
			status: rej.Status}
	}
	a.add(k, start, at, traceID, func(e *tokens.AuditEntry) {
		e.CurrentEpoch, e.HasCurrentEpoch, e.Route, e.Status = k.current, k.hasCurrent, rej.Route, rej.Status
		e.EpochSource = rej.EpochSource // the route's: the same for every refusal k counts
	})
}

// IsJunk reports whether a refusal of decision d is of the junk class: the
// write presented no token, or one that does not parse.
func IsJunk(d tokens.Decision) bool {
	return d == tokens.DecisionMissing || d == tokens.DecisionInvalid
}

// Lease records a lease event (tokens.LeaseAcquired, …) of l at at.
// Renewals of one grant are counted as one entry per interval; every other
// event is an entry of its own. An expiry's entry is the same whichever
// replica notices it (at is the lapse), so it is written once.
func (a *Recorder) Lease(at time.Time, event string, l tokens.Lease, previous *tokens.Lease, traceID string) {
	start := at.Truncate(a.o.Interval)
	k := auditKey{stream: tokens.AuditLeases, start: start.UnixNano(), resource: l.Name, kind: event, holder: l.Holder,
		epoch: l.Epoch}
	switch event {
	case tokens.LeaseExpired:
		k.shared = true
	case tokens.LeaseRenewed:
	default:
		k.at = at.Format(time.RFC3339Nano)
	}
	a.add(k, start, at, traceID, func(e *tokens.AuditEntry) {
		e.TTL, e.LockDelay = l.TTL, l.LockDelay
		if event == tokens.LeaseAcquired || event == tokens.LeaseRenewed {
			e.ExpiresAt = l.ExpiresAt.UTC()
		}
		if previous != nil {
			e.PreviousHolder, e.PreviousEpoch = previous.Holder, previous.Epoch
		}
	})
}

// add counts one event at at into the entry of k, creating it (filled in
// by fill) when there is room; an entry that exists takes fill's values
// when at is its latest event.
func (a *Recorder) add(k auditKey, start, at time.Time, traceID string, fill func(*tokens.AuditEntry)) {
	at = at.UTC()
	a.mu.Lock()
	s, ok := a.entries[k]
	switch {
	case ok && k.kind == tokens.LeaseExpired:
		a.mu.Unlock() // one lapse, however often it is noticed
		return
	case ok:
		s.e.Count++
		s.e.First = minTime(s.e.First, at)
		if at.After(s.e.Last) {
			s.e.Last = at
			fill(&s.e)
		}
	case k.stream == tokens.AuditJunk && a.junk >= a.o.JunkMaxPending,
		k.stream != tokens.AuditJunk && len(a.entries)-a.junk >= a.o.MaxPending:
		a.mu.Unlock()
		a.dropped.Add(context.Background(), 1, metric.WithAttributes(attribute.String("stream", string(k.stream))))
		return
	default:
		s = &auditSlot{end: start.Add(a.o.Interval), e: tokens.AuditEntry{Stream: k.stream, ID: k.id(a.boot, a.o.Replica),
			Resource: k.resource, Kind: k.kind, Holder: k.holder, Replica: a.o.Replica, Epoch: k.epoch,
			HasEpoch: k.hasEpoch, First: at, Last: at, Count: 1}}
		fill(&s.e)
		a.entries[k] = s
		if k.stream == tokens.AuditJunk {
			a.junk++
		}
	}
	if traceID != "" && len(s.e.TraceIDs) < tokens.MaxAuditSamples {
		s.e.TraceIDs = append(s.e.TraceIDs, traceID)
	}
	s.dirty = true
	a.mu.Unlock()
}

// Run writes changed entries every Flush until ctx ends, then once more
// (bounded by StoreTimeout) so that a clean shutdown loses nothing.
func (a *Recorder) Run(ctx context.Context) {
	t := time.NewTicker(a.o.Flush)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			a.Flush(context.Background())
			return
		case <-t.C:
			a.Flush(context.Background())
		}
	}
}

// Flush writes the entries that changed since they were last written, in
// batches of tokens.AuditBatch (history first), yielding between batches,
// and forgets the entries of ended intervals that are written. It returns
// the store's error; entries it could not write stay changed and are
// written by a later Flush.
func (a *Recorder) Flush(ctx context.Context) error {
	a.flushMu.Lock()
	defer a.flushMu.Unlock()
	batch, slots := a.changed()
	var err error
	written := 0
	for written < len(batch) && err == nil {
		if written > 0 {
			runtime.Gosched() // let a queued lease or HWM write take the store's writer
		}
		n := min(len(batch)-written, tokens.AuditBatch)
		wctx, cancel := context.WithTimeout(ctx, a.o.StoreTimeout)
		if err = a.store.PutAudit(wctx, batch[written:written+n]); err == nil {
			written += n
		}
		cancel()
	}
	now := tokens.ClockOr(a.o.Clock).Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		for _, s := range slots[written:] {
			s.dirty = true
		}
		a.failed.Add(ctx, 1)
		if !a.failing {
			a.o.Logger.LogAttrs(ctx, slog.LevelWarn, "writing the audit failed; its entries wait in memory",
				slog.Int("entries", len(batch)-written), slog.String("error", err.Error()))
		}
		a.failing = true
		return err
	}
	if a.failing {
		a.o.Logger.LogAttrs(ctx, slog.LevelInfo, "writing the audit works again", slog.Int("entries", len(batch)))
		a.failing = false
	}
	for k, s := range a.entries {
		if !s.dirty && now.After(s.end) {
			delete(a.entries, k)
			if k.stream == tokens.AuditJunk {
				a.junk--
			}
		}
	}
	return nil
}

// changed returns copies of the entries that changed since they were last
// written, history before junk, and their slots, marked clean.
func (a *Recorder) changed() ([]tokens.AuditEntry, []*auditSlot) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var batch, junk []tokens.AuditEntry
	var slots, junkSlots []*auditSlot
	for _, s := range a.entries {
		if !s.dirty {
			continue
		}
		e := s.e
		e.TraceIDs = append([]string(nil), s.e.TraceIDs...)
		if e.Stream == tokens.AuditJunk {
			junk, junkSlots = append(junk, e), append(junkSlots, s)
		} else {
			batch, slots = append(batch, e), append(slots, s)
		}
		s.dirty = false
	}
	return append(batch, junk...), append(slots, junkSlots...)
}

// Pending is the number of entries held in memory.
func (a *Recorder) Pending() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.entries)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// auditInstrumentation names the audit's meter: the gateway's (see
// observe), so that its metrics keep their scope.
const auditInstrumentation = "github.com/fencegw/fencegw/gateway"
