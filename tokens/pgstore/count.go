package pgstore

import (
	"context"

	"github.com/fencegw/fencegw/tokens"
)

// liveQueries count and reclaim lease rows.
type liveQueries struct {
	// count counts the live leases per owner: held, or lapsed without a
	// release and still in their lock-delay, on the database's clock.
	count string
}

// liveSQL is the SQL of a live lease row: held, or in its lock-delay.
const liveSQL = `(expires_at > now() OR (NOT released AND
	expires_at + lock_delay_ms * interval '1 millisecond' > now()))`

func newLiveQueries(lease string) liveQueries {
	return liveQueries{
		count: `SELECT owner, count(*) FROM ` + lease + ` WHERE ` + liveSQL + ` GROUP BY owner`,
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
