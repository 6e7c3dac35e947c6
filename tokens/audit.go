package tokens

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// AuditStream names one of the audit's logs.
type AuditStream string

// The audit's logs.
const (
	// AuditRefusals: refused fenced writes, one entry per kind of refusal
	// (resource, decision, epochs, holder, route, status, replica) and
	// interval.
	AuditRefusals AuditStream = "refusals"
	// AuditLeases: lease history: grants, renewals (one entry per grant,
	// replica and interval), releases and lapses.
	AuditLeases AuditStream = "leases"
	// AuditJunk: refusals of writes that presented no token or one that
	// does not parse, counted per route, decision, status, replica and
	// interval, without the resource: a flood of them is a few entries,
	// kept and purged apart from the history of the two logs above.
	AuditJunk AuditStream = "junk"
)

// Valid reports whether s is one of the audit's logs.
func (s AuditStream) Valid() bool { return s == AuditRefusals || s == AuditLeases || s == AuditJunk }

// AuditStreams returns the audit's logs.
func AuditStreams() []AuditStream { return []AuditStream{AuditRefusals, AuditLeases, AuditJunk} }

// AuditBatch is how many entries a store writes or deletes in one
// transaction at most: audit work holds a store's writer (bbolt has one)
// for one small batch at a time, so that a lease renewal or a HWM raise
// waits for one batch at most, never for a whole flush or purge.
const AuditBatch = 256

// The lease events of the AuditLeases log (an entry's Kind).
const (
	LeaseAcquired = "acquired"
	LeaseRenewed  = "renewed"
	LeaseReleased = "released"
	// LeaseExpired is recorded when a grant is found lapsed: by the
	// acquire that follows it. First is when it lapsed.
	LeaseExpired = "expired"
)

// MaxAuditSamples bounds the trace ids an entry keeps.
const MaxAuditSamples = 5

// AuditEntry is one line of the durable audit: events that are identical
// but for their time, counted over one interval. A writer keeps an entry's
// running total and writes it whole each time it changed (PutAudit), so a
// write that is retried or repeated counts nothing twice.
type AuditEntry struct {
	Stream AuditStream `json:"stream"`
	// ID identifies the entry within its stream and orders it: the start
	// of its interval in Unix milliseconds, zero-padded, then a digest of
	// what makes its events identical (see AuditID). Newer intervals sort
	// higher.
	ID string `json:"id"`
	// Resource is the resource refused, or the lease's name.
	Resource string `json:"resource"`
	// Kind is the decision (refusals) or the lease event (leases).
	Kind    string `json:"kind"`
	Holder  string `json:"holder,omitempty"`
	Replica string `json:"replica,omitempty"`
	// Epoch is the presented epoch (refusals) or the grant's (leases).
	Epoch int64 `json:"epoch,omitempty"`
	// CurrentEpoch is the resource's HWM when a write was refused.
	CurrentEpoch int64 `json:"current_epoch,omitempty"`
	// HasEpoch and HasCurrentEpoch say that a refusal's Epoch and
	// CurrentEpoch are known, also when they are 0 (an epoch source may
	// vouch for epoch 0). An entry written without them knows an epoch
	// exactly when it is positive.
	HasEpoch        bool   `json:"has_epoch,omitempty"`
	HasCurrentEpoch bool   `json:"has_current_epoch,omitempty"`
	Route           string `json:"route,omitempty"`
	// EpochSource is the kind of the route's epoch source, when it has one
	// (refusals).
	EpochSource string `json:"epoch_source,omitempty"`
	Status      int    `json:"status,omitempty"`
	// ExpiresAt is the grant's expiry after the event (acquired, renewed:
	// the latest renewal's).
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// TTL and LockDelay are the grant's terms.
	TTL       time.Duration `json:"ttl,omitempty"`
	LockDelay time.Duration `json:"lock_delay,omitempty"`
	// PreviousHolder and PreviousEpoch name the grant an acquire took
	// over from.
	PreviousHolder string `json:"previous_holder,omitempty"`
	PreviousEpoch  int64  `json:"previous_epoch,omitempty"`
	// First and Last are the times of the first and last event counted.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Count is how many events the entry stands for.
	Count int64 `json:"count"`
	// TraceIDs are the traces of the first few events (MaxAuditSamples).
	TraceIDs []string `json:"trace_ids,omitempty"`
}

// AuditID returns the ID of the entry of interval start whose events are
// identified by parts.
func AuditID(start time.Time, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return fmt.Sprintf("%013d-%x", max(start.UnixMilli(), 0), h.Sum(nil)[:8])
}

// AuditIDBefore returns an ID that sorts below every ID of intervals that
// start at t or later.
func AuditIDBefore(t time.Time) string {
	return fmt.Sprintf("%013d", max(t.UnixMilli(), 0))
}

// ValidAuditID reports whether id has AuditID's form.
func ValidAuditID(id string) bool {
	if len(id) != 13+1+16 || id[13] != '-' {
		return false
	}
	if _, err := strconv.ParseUint(id[:13], 10, 64); err != nil {
		return false
	}
	_, err := strconv.ParseUint(id[14:], 16, 64)
	return err == nil
}

// AuditQuery selects audit entries of one stream, newest interval first.
// Empty fields select everything.
type AuditQuery struct {
	Stream   AuditStream
	Resource string
	Kind     string
	Holder   string
	Replica  string
	// Since and Until keep the entries whose [First, Last] meets them.
	Since, Until time.Time
	// Before, when not empty, keeps the entries whose ID sorts below it:
	// the last ID of the page before.
	Before string
	// Limit is the most entries returned (at least 1).
	Limit int
}

// Matches reports whether e is selected by q's filters (not by Before or
// Limit, which stores apply as they scan).
func (q AuditQuery) Matches(e AuditEntry) bool {
	switch {
	case q.Resource != "" && e.Resource != q.Resource,
		q.Kind != "" && e.Kind != q.Kind,
		q.Holder != "" && e.Holder != q.Holder,
		q.Replica != "" && e.Replica != q.Replica,
		!q.Since.IsZero() && e.Last.Before(q.Since),
		!q.Until.IsZero() && e.First.After(q.Until):
		return false
	}
	return true
}

// AuditStore keeps the durable audit in the fencing store, shared by every
// replica and kept across restarts.
type AuditStore interface {
	// PutAudit stores each entry under its stream and ID, replacing the
	// entry there. Entries are written whole by the one writer that counts
	// them, so a retried put is harmless. A batch may be written in part
	// when it fails. A store writes at most AuditBatch entries per
	// transaction.
	PutAudit(ctx context.Context, entries []AuditEntry) error
	// ListAudit returns up to q.Limit entries selected by q, highest ID
	// first.
	ListAudit(ctx context.Context, q AuditQuery) ([]AuditEntry, error)
	// PurgeAudit deletes stream's entries whose interval started before
	// before, then the oldest of those left beyond the newest keep, at
	// most limit of them (at least 1) in one bounded step, and returns
	// how many it deleted. A caller purges all by calling again, yielding
	// in between, until it deletes fewer than limit.
	PurgeAudit(ctx context.Context, stream AuditStream, before time.Time, keep, limit int) (int, error)
	AuditResourceLister
}

// MaxAuditInterval bounds an entry's interval: its First is not before the
// start its ID encodes, and its Last is before that start plus
// MaxAuditInterval (audit.interval is at most an hour). Stores rely on it
// to read only the IDs a time filter can select (AuditIDRange).
const MaxAuditInterval = time.Hour

// AuditSpan returns how far e's Last lies past the start its ID encodes,
// rounded up to the millisecond. A store keeps the longest span of each
// stream's entries, so that a query since T reads no ID that starts before
// T minus that span.
func AuditSpan(e AuditEntry) time.Duration {
	if len(e.ID) < 13 {
		return MaxAuditInterval
	}
	start, err := strconv.ParseInt(e.ID[:13], 10, 64)
	if err != nil {
		return MaxAuditInterval
	}
	return time.Duration(max(e.Last.UnixMilli()-start+1, 0)) * time.Millisecond
}

// AuditIDRange returns the IDs q can select from a stream whose entries
// span at most span (AuditSpan; MaxAuditInterval when unknown): at or
// above lo and below hi (each unbounded when empty), from q.Before and
// q's times.
func AuditIDRange(q AuditQuery, span time.Duration) (lo, hi string) {
	hi = q.Before
	if !q.Until.IsZero() {
		// IDs of intervals that start after Until sort at or above this.
		if u := AuditIDBefore(q.Until.Add(time.Millisecond)); hi == "" || u < hi {
			hi = u
		}
	}
	if !q.Since.IsZero() {
		lo = AuditIDBefore(q.Since.Add(-span))
	}
	return lo, hi
}

// AuditIndexKeys returns the secondary index keys of e, relative to its
// stream's index: one by resource, one by kind, each ending in e.ID so that
// an index prefix lists its IDs in order. A store writes them with the
// entry and deletes them with it.
func AuditIndexKeys(e AuditEntry) []string {
	return []string{AuditIndexPrefix("r", e.Resource) + e.ID, AuditIndexPrefix("k", e.Kind) + e.ID}
}

// AuditIndexPrefix is the prefix of the index keys of field ("r" for the
// resource, "k" for the kind) with value: the value with each NUL byte
// escaped as NUL 1, then NUL NUL. Keys sort by value (as strings) first,
// and no value's prefix is another's.
func AuditIndexPrefix(field, value string) string {
	return auditIndexSeek(field, value) + "\x00\x00"
}

// auditIndexSeek is where the index keys of field's values that begin
// with value start.
func auditIndexSeek(field, value string) string {
	return field + "/" + strings.ReplaceAll(value, "\x00", "\x00\x01")
}

// auditIndexAfter is the first index key of field above every key of
// value.
func auditIndexAfter(field, value string) string {
	return auditIndexSeek(field, value) + "\x00\x01"
}

// auditIndexValue reads the value of a resource index key ("r/…").
func auditIndexValue(field, key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, field+"/")
	if !ok {
		return "", false
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(rest, 0)
		if i < 0 || i+1 >= len(rest) {
			return "", false
		}
		b.WriteString(rest[:i])
		if rest[i+1] == 0 {
			return b.String(), true
		}
		b.WriteByte(0)
		rest = rest[i+2:]
	}
}

// AuditIndexFor returns the index prefix a store reads for q: the
// resource's when q names one, else the kind's; ok is false when q names
// neither and the store reads the stream itself.
func AuditIndexFor(q AuditQuery) (prefix string, ok bool) {
	switch {
	case q.Resource != "":
		return AuditIndexPrefix("r", q.Resource), true
	case q.Kind != "":
		return AuditIndexPrefix("k", q.Kind), true
	}
	return "", false
}
