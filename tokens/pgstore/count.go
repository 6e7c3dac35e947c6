package pgstore

import (
	"context"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// liveQueries count and reclaim lease rows.
type liveQueries struct {
	// count counts the live leases per owner: held, or lapsed without a
	// release and still in their lock-delay, on the database's clock.
	count string
	// reclaim deletes at most $2 rows of leases that ended (released, or
	// lapsed with their lock-delay over) at least $1 milliseconds ago; it
	// skips rows an acquire has locked. The HWM table is untouched.
	reclaim string
}

// liveSQL is the SQL of a live lease row: held, or in its lock-delay.
const liveSQL = `(expires_at > now() OR (NOT released AND
	expires_at + lock_delay_ms * interval '1 millisecond' > now()))`

// endedSQL is the SQL of a lease row that ended at least $1 milliseconds
// ago: its expiry (a release sets it), plus its lock-delay unless it was
// released.
const endedSQL = `expires_at + (CASE WHEN released THEN 0 ELSE lock_delay_ms END + $1::bigint) * interval '1 millisecond' <= now()`

func newLiveQueries(lease string) liveQueries {
	return liveQueries{
		count: `SELECT owner, count(*) FROM ` + lease + ` WHERE ` + liveSQL + ` GROUP BY owner`,
		reclaim: `DELETE FROM ` + lease + ` WHERE name IN (
	SELECT name FROM ` + lease + ` WHERE ` + endedSQL + `
	LIMIT $2 FOR UPDATE SKIP LOCKED)
AND ` + endedSQL,
	}
}

// LiveLeases counts the live leases in one statement on the primary; see
// tokens.LeaseCounter. It scans the lease table, whose rows reclaim bounds.
func (s *Store) LiveLeases(ctx context.Context) (tokens.LiveCount, error) {
	c := tokens.LiveCount{ByOwner: map[string]int{}}
	rows, err := s.pool.Query(ctx, s.lq.count)
	if err != nil {
		return tokens.LiveCount{}, &tokens.UnavailableError{Op: "count leases", Err: err}
	}
	defer rows.Close()
	for rows.Next() {
		var (
			owner string
			n     int
		)
		if err := rows.Scan(&owner, &n); err != nil {
			return tokens.LiveCount{}, &tokens.UnavailableError{Op: "count leases", Err: err}
		}
		c.ByOwner[owner] = n
		c.Total += n
	}
	if err := rows.Err(); err != nil {
		return tokens.LiveCount{}, &tokens.UnavailableError{Op: "count leases", Err: err}
	}
	return c, nil
}

// ReclaimLeases deletes a batch of ended leases' rows in one statement on
// the primary; see tokens.LeaseReclaimer. The HWM row, with the issued
// epoch, stays: the next grant is one above it, and Mark reads the issued
// epoch as the reclaimed grant's.
func (s *Store) ReclaimLeases(ctx context.Context, retention time.Duration, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, s.lq.reclaim, retention.Milliseconds(), limit)
	if err != nil {
		return 0, &tokens.UnavailableError{Op: "reclaim leases", Err: err}
	}
	return int(tag.RowsAffected()), nil
}
