package gateway

import (
	"github.com/fencegw/fencegw/wire"
	"log/slog"
	"net/http"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// Rejection is one entry of the audit of refused writes: the identical
// refusals (resource, decision, epochs, holder, route, status) one replica
// made within one interval, counted.
type Rejection struct {
	ID             string          `json:"id"`
	Resource       string          `json:"resource"`
	Decision       tokens.Decision `json:"decision"`
	PresentedEpoch *wire.Epoch     `json:"presented_epoch,omitempty"`
	CurrentEpoch   *wire.Epoch     `json:"current_epoch,omitempty"`
	Holder         string          `json:"holder,omitempty"`
	Replica        string          `json:"replica"`
	Route          string          `json:"route"`
	Status         int             `json:"status"`
	Count          int64           `json:"count"`
	First          time.Time       `json:"first"`
	Last           time.Time       `json:"last"`
	// TraceIDs are the traces of the first few refusals counted.
	TraceIDs []string `json:"trace_ids"`
}

// Rejections is the body of GET /v1/audit/rejections.
type Rejections struct {
	Rejections []Rejection `json:"rejections"`
	// NextCursor, when present, asks for the next (older) page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// LeaseRecord is one entry of the lease history: a grant, a release or a
// lapse, or the renewals of one grant through one replica within one
// interval, counted.
type LeaseRecord struct {
	ID      string     `json:"id"`
	Name    string     `json:"name"`
	Event   string     `json:"event"`
	Holder  string     `json:"holder"`
	Epoch   wire.Epoch `json:"epoch"`
	Replica string     `json:"replica"`
	Count   int64      `json:"count"`
	// First and Last are the times of the first and last event counted;
	// for an expiry, when the grant lapsed.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// ExpiresAt is when the grant lapses after the event (acquired and
	// renewed).
	ExpiresAt        *time.Time `json:"expires_at,omitempty"`
	TTLSeconds       *float64   `json:"ttl_seconds,omitempty"`
	LockDelaySeconds *float64   `json:"lock_delay_seconds,omitempty"`
	// PreviousHolder and PreviousEpoch name the grant an acquire followed.
	PreviousHolder string      `json:"previous_holder,omitempty"`
	PreviousEpoch  *wire.Epoch `json:"previous_epoch,omitempty"`
	TraceIDs       []string    `json:"trace_ids"`
}

// LeaseHistory is the body of GET /v1/audit/leases.
type LeaseHistory struct {
	Events     []LeaseRecord `json:"events"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

// Limits of an audit page.
const (
	defaultAuditPage = 100
	maxAuditPage     = 1000
)

func (c *control) rejections(w http.ResponseWriter, r *http.Request) {
	q, ok := auditQuery(w, r, tokens.AuditRefusals)
	if !ok {
		return
	}
	entries, ok := c.listAudit(w, r, q)
	if !ok {
		return
	}
	out := Rejections{Rejections: make([]Rejection, 0, len(entries)), NextCursor: nextCursor(q, entries)}
	for _, e := range entries {
		rej := Rejection{ID: e.ID, Resource: e.Resource, Decision: tokens.Decision(e.Kind), Holder: e.Holder,
			Replica: e.Replica, Route: e.Route, Status: e.Status, Count: e.Count, First: e.First, Last: e.Last,
			TraceIDs: nonNil(e.TraceIDs)}
		if e.Epoch > 0 {
			rej.PresentedEpoch = epochPtr(e.Epoch)
		}
		if e.CurrentEpoch > 0 {
			rej.CurrentEpoch = epochPtr(e.CurrentEpoch)
		}
		out.Rejections = append(out.Rejections, rej)
	}
	writeJSON(w, http.StatusOK, out)
}

func (c *control) leaseHistory(w http.ResponseWriter, r *http.Request) {
	q, ok := auditQuery(w, r, tokens.AuditLeases)
	if !ok {
		return
	}
	entries, ok := c.listAudit(w, r, q)
	if !ok {
		return
	}
	out := LeaseHistory{Events: make([]LeaseRecord, 0, len(entries)), NextCursor: nextCursor(q, entries)}
	for _, e := range entries {
		rec := LeaseRecord{ID: e.ID, Name: e.Resource, Event: e.Kind, Holder: e.Holder, Epoch: wire.Epoch(e.Epoch),
			Replica: e.Replica, Count: e.Count, First: e.First, Last: e.Last, PreviousHolder: e.PreviousHolder,
			TraceIDs: nonNil(e.TraceIDs)}
		if !e.ExpiresAt.IsZero() {
			at := e.ExpiresAt
			rec.ExpiresAt = &at
		}
		if e.TTL > 0 {
			s := e.TTL.Seconds()
			rec.TTLSeconds = &s
		}
		if e.Kind == tokens.LeaseAcquired || e.Kind == tokens.LeaseExpired {
			s := e.LockDelay.Seconds()
			rec.LockDelaySeconds = &s
		}
		if e.PreviousEpoch > 0 {
			rec.PreviousEpoch = epochPtr(e.PreviousEpoch)
		}
		out.Events = append(out.Events, rec)
	}
	writeJSON(w, http.StatusOK, out)
}

// listAudit reads one page from the store, having answered 503 when it
// could not.
func (c *control) listAudit(w http.ResponseWriter, r *http.Request, q tokens.AuditQuery) ([]tokens.AuditEntry, bool) {
	entries, err := listAuditClasses(r.Context(), c.Fence.Store(), q)
	if err != nil {
		c.Logger.LogAttrs(r.Context(), slog.LevelWarn, "reading the audit failed", slog.String("error", err.Error()))
		writeError(w, r, refuseCause(KindStoreUnavailable, "the audit could not be read from the store", err))
		return nil, false
	}
	return entries, true
}

// nextCursor is the cursor of the page after entries: the last ID when
// the page is full (there may be more).
func nextCursor(q tokens.AuditQuery, entries []tokens.AuditEntry) string {
	if len(entries) < q.Limit || len(entries) == 0 {
		return ""
	}
	return entries[len(entries)-1].ID
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
