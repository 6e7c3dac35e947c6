package control

import (
	"log/slog"
	"net/http"

	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/fencegw/fencegw/wire"

	"github.com/fencegw/fencegw/tokens"
)

// Limits of an audit page.
const (
	defaultAuditPage = 100
	maxAuditPage     = 1000
)

func (c *control) rejections(w http.ResponseWriter, r *http.Request) {
	if items, next, ok := auditItems(c, w, r, tokens.AuditRefusals, rejectionOf); ok {
		writeJSON(w, http.StatusOK, wire.Rejections{Rejections: items, NextCursor: next})
	}
}

func (c *control) leaseHistory(w http.ResponseWriter, r *http.Request) {
	if items, next, ok := auditItems(c, w, r, tokens.AuditLeases, leaseRecordOf); ok {
		writeJSON(w, http.StatusOK, wire.LeaseHistory{Events: items, NextCursor: next})
	}
}

// auditItems is the page of stream that r asks for (see auditPage), each
// entry converted by item, in the store's order; the slice is empty, never
// nil, when the page is. ok is false when auditPage answered r.
func auditItems[T any](c *control, w http.ResponseWriter, r *http.Request, stream tokens.AuditStream,
	item func(tokens.AuditEntry) T) (items []T, next string, ok bool) {
	entries, next, ok := c.auditPage(w, r, stream)
	if !ok {
		return nil, "", false
	}
	items = make([]T, 0, len(entries))
	for _, e := range entries {
		items = append(items, item(e))
	}
	return items, next, true
}

// rejectionOf is a refusals entry as GET /v1/audit/rejections lists it.
func rejectionOf(e tokens.AuditEntry) wire.Rejection {
	rej := wire.Rejection{ID: e.ID, Resource: e.Resource, Decision: e.Kind, Holder: e.Holder,
		Replica: e.Replica, Route: e.Route, EpochSource: e.EpochSource, Status: e.Status, Count: e.Count, First: e.First,
		Last: e.Last, TraceIDs: nonNil(e.TraceIDs)}
	if e.HasEpoch || e.Epoch > 0 {
		rej.PresentedEpoch = problem.EpochPtr(e.Epoch)
	}
	if e.HasCurrentEpoch || e.CurrentEpoch > 0 {
		rej.CurrentEpoch = problem.EpochPtr(e.CurrentEpoch)
	}
	return rej
}

// leaseRecordOf is a lease-events entry as GET /v1/audit/leases lists it.
func leaseRecordOf(e tokens.AuditEntry) wire.LeaseRecord {
	rec := wire.LeaseRecord{ID: e.ID, Name: e.Resource, Event: e.Kind, Holder: e.Holder, Epoch: wire.Epoch(e.Epoch),
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
		rec.PreviousEpoch = problem.EpochPtr(e.PreviousEpoch)
	}
	return rec
}

// auditPage reads the page of stream that r asks for from the store, with
// the cursor of the page after it, having answered 400 when r's query is
// not one and 503 when the store could not be read.
func (c *control) auditPage(w http.ResponseWriter, r *http.Request, stream tokens.AuditStream) (entries []tokens.AuditEntry, next string, ok bool) {
	q, ok := auditQuery(w, r, stream)
	if !ok {
		return nil, "", false
	}
	entries, err := listAuditClasses(r.Context(), c.Fence.Store(), q)
	if err != nil {
		c.Logger.LogAttrs(r.Context(), slog.LevelWarn, "reading the audit failed", slog.String("error", err.Error()))
		problem.WriteError(w, r, problem.RefuseCause(problem.KindStoreUnavailable, "the audit could not be read from the store", err))
		return nil, "", false
	}
	return entries, nextCursor(q, entries), true
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
