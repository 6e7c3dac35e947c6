package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// auditQueries is the SQL of the audit, for the table t.
type auditQueries struct {
	// put upserts the entries of the JSON array $1.
	put string
	// list selects the entries of stream $1; listSQL adds the conditions.
	list string
	// resources selects the distinct resources above $1 that begin with
	// $2, lowest first, at most $3.
	resources string
	// purgeOld deletes up to $3 of stream $1's entries with IDs below $2,
	// the oldest first.
	purgeOld string
	// purgeExcess deletes up to $3 of stream $1's entries beyond the
	// newest $2, the oldest first.
	purgeExcess string
}

func newAuditQueries(t string) auditQueries {
	return auditQueries{
		put: `INSERT INTO ` + t + ` (stream, id, resource, kind, holder, replica, first_at, last_at, entry)
SELECT e->>'stream', e->>'id', e->>'resource', e->>'kind', coalesce(e->>'holder', ''), coalesce(e->>'replica', ''),
	(e->>'first')::timestamptz, (e->>'last')::timestamptz, e
FROM jsonb_array_elements($1::jsonb) AS e
ON CONFLICT (stream, id) DO UPDATE
SET resource = EXCLUDED.resource, kind = EXCLUDED.kind, holder = EXCLUDED.holder, replica = EXCLUDED.replica,
	first_at = EXCLUDED.first_at, last_at = EXCLUDED.last_at, entry = EXCLUDED.entry`,
		list: `SELECT entry FROM ` + t + ` WHERE stream = $1`,
		resources: `SELECT DISTINCT resource FROM ` + t + `
WHERE resource > $1 AND starts_with(resource, $2) ORDER BY resource LIMIT $3`,
		purgeOld: `DELETE FROM ` + t + ` WHERE stream = $1 AND id IN (
	SELECT id FROM ` + t + ` WHERE stream = $1 AND id < $2 ORDER BY id LIMIT $3)`,
		purgeExcess: `DELETE FROM ` + t + ` WHERE stream = $1 AND id IN (
	SELECT id FROM ` + t + ` WHERE stream = $1
		AND id <= (SELECT id FROM ` + t + ` WHERE stream = $1 ORDER BY id DESC OFFSET $2 LIMIT 1)
	ORDER BY id LIMIT $3)`,
	}
}

// PutAudit upserts entries in statements of up to tokens.AuditBatch
// entries; see tokens.AuditStore.
func (s *Store) PutAudit(ctx context.Context, entries []tokens.AuditEntry) error {
	for len(entries) > 0 {
		n := min(len(entries), tokens.AuditBatch)
		v, err := json.Marshal(entries[:n])
		if err != nil {
			return err
		}
		if _, err := s.pool.Exec(ctx, s.aq.put, v); err != nil {
			return &tokens.UnavailableError{Op: "audit", Err: err}
		}
		entries = entries[n:]
	}
	return nil
}

// ListAudit selects entries in SQL, by the (stream, resource, id) index
// when q names a resource, within the IDs q's times allow
// (tokens.AuditIDRange); see tokens.AuditStore.
func (s *Store) ListAudit(ctx context.Context, q tokens.AuditQuery) ([]tokens.AuditEntry, error) {
	sql, args := s.aq.listSQL(q)
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, &tokens.UnavailableError{Op: "audit", Err: err}
	}
	defer rows.Close()
	var out []tokens.AuditEntry
	for rows.Next() {
		var v []byte
		if err := rows.Scan(&v); err != nil {
			return nil, &tokens.UnavailableError{Op: "audit", Err: err}
		}
		var e tokens.AuditEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return nil, &tokens.UnavailableError{Op: "audit", Err: err}
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, &tokens.UnavailableError{Op: "audit", Err: err}
	}
	return out, nil
}

// PurgeAudit deletes up to limit old entries, then up to what is left of
// limit beyond keep, each in one bounded statement; see tokens.AuditStore.
func (s *Store) PurgeAudit(ctx context.Context, stream tokens.AuditStream, before time.Time, keep, limit int) (int, error) {
	limit = max(limit, 1)
	old, err := s.pool.Exec(ctx, s.aq.purgeOld, string(stream), tokens.AuditIDBefore(before), limit)
	if err != nil {
		return 0, &tokens.UnavailableError{Op: "audit purge", Err: err}
	}
	n := int(old.RowsAffected())
	if n >= limit {
		return n, nil
	}
	excess, err := s.pool.Exec(ctx, s.aq.purgeExcess, string(stream), keep, limit-n)
	if err != nil {
		return n, &tokens.UnavailableError{Op: "audit purge", Err: err}
	}
	return n + int(excess.RowsAffected()), nil
}

// ListAuditResources selects the distinct resources in SQL; see
// tokens.AuditResourceLister.
func (s *Store) ListAuditResources(ctx context.Context, q tokens.AuditResourceQuery) ([]string, error) {
	rows, err := s.pool.Query(ctx, s.aq.resources, q.After, q.Prefix, q.Limit)
	if err != nil {
		return nil, &tokens.UnavailableError{Op: "audit", Err: err}
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, &tokens.UnavailableError{Op: "audit", Err: err}
		}
		out = append(out, name)
	}
	if err := rows.Err(); err != nil {
		return nil, &tokens.UnavailableError{Op: "audit", Err: err}
	}
	return out, nil
}

// listSQL returns the statement that selects q's entries, highest ID
// first, and its arguments: only the conditions q sets, so that the
// planner sees which index serves them (a condition "$n = ” OR …" hides
// it from a generic plan). Every value is an argument.
func (aq auditQueries) listSQL(q tokens.AuditQuery) (string, []any) {
	lo, hi := tokens.AuditIDRange(q, tokens.MaxAuditInterval)
	var b strings.Builder
	b.WriteString(aq.list)
	args := []any{string(q.Stream)}
	add := func(cond string, v any) {
		args = append(args, v)
		fmt.Fprintf(&b, " AND "+cond, len(args))
	}
	for _, c := range []struct {
		cond  string
		value string
	}{{"resource = $%d", q.Resource}, {"kind = $%d", q.Kind}, {"holder = $%d", q.Holder}, {"replica = $%d", q.Replica},
		{"id < $%d", hi}, {"id >= $%d", lo}} {
		if c.value != "" {
			add(c.cond, c.value)
		}
	}
	if !q.Since.IsZero() {
		add("last_at >= $%d", q.Since)
	}
	if !q.Until.IsZero() {
		add("first_at <= $%d", q.Until)
	}
	args = append(args, q.Limit)
	fmt.Fprintf(&b, " ORDER BY id DESC LIMIT $%d", len(args))
	return b.String(), args
}
