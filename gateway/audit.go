package gateway

import (
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
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
	PresentedEpoch *int64          `json:"presented_epoch,omitempty"`
	CurrentEpoch   *int64          `json:"current_epoch,omitempty"`
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
	ID      string `json:"id"`
	Name    string `json:"name"`
	Event   string `json:"event"`
	Holder  string `json:"holder"`
	Epoch   int64  `json:"epoch"`
	Replica string `json:"replica"`
	Count   int64  `json:"count"`
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
	PreviousHolder string   `json:"previous_holder,omitempty"`
	PreviousEpoch  *int64   `json:"previous_epoch,omitempty"`
	TraceIDs       []string `json:"trace_ids"`
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
	q, ok := auditQuery(w, r, tokens.AuditRefusals, "resource", "decision")
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
	q, ok := auditQuery(w, r, tokens.AuditLeases, "name", "event")
	if !ok {
		return
	}
	entries, ok := c.listAudit(w, r, q)
	if !ok {
		return
	}
	out := LeaseHistory{Events: make([]LeaseRecord, 0, len(entries)), NextCursor: nextCursor(q, entries)}
	for _, e := range entries {
		rec := LeaseRecord{ID: e.ID, Name: e.Resource, Event: e.Kind, Holder: e.Holder, Epoch: e.Epoch,
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

// auditQuery reads an audit page's query string: the filters (the
// stream's names for the resource and the kind, holder, replica), since
// and until (RFC 3339), limit and cursor. It answers 400 naming every
// unknown or malformed parameter.
func auditQuery(w http.ResponseWriter, r *http.Request, stream tokens.AuditStream, resourceParam, kindParam string) (tokens.AuditQuery, bool) {
	q := tokens.AuditQuery{Stream: stream, Limit: defaultAuditPage}
	known := []string{resourceParam, kindParam, "holder", "replica", "since", "until", "limit", "cursor"}
	values := r.URL.Query()
	var problems []string
	for name, vs := range values {
		if !slices.Contains(known, name) {
			problems = append(problems, "unknown parameter "+strconv.Quote(name)+" (known: "+strings.Join(known, ", ")+")")
		} else if len(vs) > 1 {
			problems = append(problems, name+" is given more than once")
		}
	}
	q.Resource, q.Kind = values.Get(resourceParam), values.Get(kindParam)
	q.Holder, q.Replica = values.Get("holder"), values.Get("replica")
	problems = nameProblems(values, problems, resourceParam, "holder")
	q.Since, problems = parseTimeParam(values, "since", problems)
	q.Until, problems = parseTimeParam(values, "until", problems)
	if s := values.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxAuditPage {
			problems = append(problems, "limit must be an integer from 1 to "+strconv.Itoa(maxAuditPage))
		}
		q.Limit = n
	}
	if s := values.Get("cursor"); s != "" {
		if !tokens.ValidAuditID(s) {
			problems = append(problems, "cursor is not one this API returned")
		}
		q.Before = s
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		badRequest(w, r, strings.Join(problems, "; "))
		return q, false
	}
	return q, true
}

// parseTimeParam parses the RFC 3339 time of parameter name, if any.
func parseTimeParam(values url.Values, name string, problems []string) (time.Time, []string) {
	s := values.Get(name)
	if s == "" {
		return time.Time{}, problems
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return t, append(problems, name+" must be an RFC 3339 time such as 2026-12-03T17:00:00Z")
	}
	return t, problems
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
