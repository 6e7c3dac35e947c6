package pgstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// auditQueries is the SQL of the audit, for the table t.
type auditQueries struct {
	// put upserts the entries of the JSON array $1.
	put string
	// list selects entries of stream $1 by resource $2, kind $3, holder
	// $4, replica $5, since $6, until $7 and below ID $8 (each ignored
	// when empty or null), highest ID first, at most $9.
	list string
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
		list: `SELECT entry FROM ` + t + `
WHERE stream = $1 AND ($2 = '' OR resource = $2) AND ($3 = '' OR kind = $3) AND ($4 = '' OR holder = $4)
	AND ($5 = '' OR replica = $5) AND ($6::timestamptz IS NULL OR last_at >= $6)
	AND ($7::timestamptz IS NULL OR first_at <= $7) AND ($8 = '' OR id < $8)
ORDER BY id DESC LIMIT $9`,
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

// ListAudit selects entries in SQL; see tokens.AuditStore.
func (s *Store) ListAudit(ctx context.Context, q tokens.AuditQuery) ([]tokens.AuditEntry, error) {
	rows, err := s.pool.Query(ctx, s.aq.list, string(q.Stream), q.Resource, q.Kind, q.Holder, q.Replica,
		timeOrNil(q.Since), timeOrNil(q.Until), q.Before, q.Limit)
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

// timeOrNil is t as a query argument: NULL when zero.
func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
