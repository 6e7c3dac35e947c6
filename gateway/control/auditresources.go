package control

import (
	"log/slog"
	"net/http"
	"strconv"

	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/fencegw/fencegw/wire"

	"github.com/fencegw/fencegw/tokens"
)

// auditResources lists the audit's distinct names, from the store's
// index: by prefix, in byte order, paged.
func (c *control) auditResources(w http.ResponseWriter, r *http.Request) {
	q, err := parseResourceQuery(r.URL.RawQuery)
	if err != nil {
		badRequest(w, r, err.Error())
		return
	}
	names, err := c.Fence.Store().ListAuditResources(r.Context(), q)
	if err != nil {
		c.Logger.LogAttrs(r.Context(), slog.LevelWarn, "reading the audit failed", slog.String("error", err.Error()))
		problem.WriteError(w, r, problem.RefuseCause(problem.KindStoreUnavailable, "the audit could not be read from the store", err))
		return
	}
	out := wire.AuditResources{Resources: make([]wire.AuditResource, 0, len(names))}
	for _, n := range names {
		out.Resources = append(out.Resources, wire.AuditResource{Name: n})
	}
	if len(names) == q.Limit {
		out.NextCursor = names[len(names)-1]
	}
	writeJSON(w, http.StatusOK, out)
}

// parseResourceQuery reads GET /v1/audit/resources's query as strictly as
// an audit list's: prefix (any text without control characters, empty
// for all), limit (1 to maxAuditPage, default defaultAuditPage) and
// cursor (a name the page before ended with); anything else is a
// *queryError.
func parseResourceQuery(raw string) (tokens.AuditResourceQuery, error) {
	q := tokens.AuditResourceQuery{Limit: defaultAuditPage}
	params, err := parseRawQuery(raw)
	if err != nil {
		return q, err
	}
	seen := map[string]bool{}
	for _, p := range params {
		if seen[p.name] {
			return q, &queryError{p.name, "given more than once"}
		}
		seen[p.name] = true
		switch p.name {
		case "prefix":
			if p.value != "" {
				q.Prefix, err = textParam(p)
			}
		case "limit":
			q.Limit, err = limitParam(p)
		case "cursor":
			if verr := tokens.ValidateResource(p.value); verr != nil {
				return q, &queryError{p.name, "is not a next_cursor this API returned"}
			}
			q.After = p.value
		default:
			return q, &queryError{strconv.Quote(p.name), "unknown parameter (known: cursor, limit, prefix)"}
		}
		if err != nil {
			return q, err
		}
	}
	return q, nil
}
