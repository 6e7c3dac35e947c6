package control

import (
	"context"
	"slices"
	"strings"

	"github.com/fencegw/fencegw/gateway/audit"

	"github.com/fencegw/fencegw/tokens"
)

// listAuditClasses lists one page of q from store. A page of refusals is
// the refusals log merged with the junk log (refusals of writes without a
// usable token, kept apart so that they never take history's room), in ID
// order; junk entries have no resource or holder, so a query naming one
// lists none of them.
func listAuditClasses(ctx context.Context, store tokens.AuditStore, q tokens.AuditQuery) ([]tokens.AuditEntry, error) {
	entries, err := store.ListAudit(ctx, q)
	if err != nil || q.Stream != tokens.AuditRefusals || q.Resource != "" || q.Holder != "" ||
		(q.Kind != "" && !audit.IsJunk(tokens.Decision(q.Kind))) {
		return entries, err
	}
	jq := q
	jq.Stream = tokens.AuditJunk
	junk, err := store.ListAudit(ctx, jq)
	if err != nil || len(junk) == 0 {
		return entries, err
	}
	merged := append(entries, junk...)
	slices.SortFunc(merged, func(a, b tokens.AuditEntry) int { return strings.Compare(b.ID, a.ID) })
	return merged[:min(len(merged), q.Limit)], nil
}
