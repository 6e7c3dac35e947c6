package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/tokens"
)

// keptEvents is about how many lease changes, of all leases together, the
// event log keeps (see migration 9): a watch resuming from before them
// starts with the latest change, Gap set.
const keptEvents = 100_000

// maxEventsRead bounds the changes one read of the event log returns.
const maxEventsRead = 1000

// eventColumns are the event log's columns in scanLease's order, then id.
const eventColumns = `holder, epoch, ttl_ms, expires_at, held, owner, lock_delay_ms, released, version, id`

// watchQueries read the lease event log.
type watchQueries struct {
	// after reads the changes of lease $1 with id above $2, oldest first.
	after string
	// latest reads the latest change of lease $1.
	latest string
	// floor reads the lowest id the log still keeps (0 when empty).
	floor string
}

func newWatchQueries(table string) watchQueries {
	return watchQueries{
		after:  `SELECT ` + eventColumns + ` FROM ` + table + ` WHERE name = $1 AND id > $2 ORDER BY id LIMIT ` + fmt.Sprint(maxEventsRead),
		latest: `SELECT ` + eventColumns + ` FROM ` + table + ` WHERE name = $1 ORDER BY id DESC LIMIT 1`,
		floor:  `SELECT coalesce(min(id), 0) FROM ` + table,
	}
}

// WatchLease streams every change of lease name made through any replica;
// see tokens.LeaseWatcher. Each change is a row of the event log, written
// by the same statement as the change and numbered by its id; watchers
// learn of new rows by LISTEN/NOTIFY and read the log from the last id
// they sent, so no change is folded into another, however close together.
// The channel closes when a read fails (the caller watches again).
func (s *Store) WatchLease(ctx context.Context, name string, after int64) (<-chan tokens.LeaseChange, error) {
	notes, err := s.SubscribeLease(ctx, name)
	if err != nil {
		return nil, err
	}
	// Only a resumed watch may find its changes trimmed, or resume from
	// beyond the latest change: checked until the first change is found.
	check := after >= 0
	return tokens.FollowChanges(ctx, notes, after, func(ctx context.Context, after int64, latest bool) ([]tokens.LeaseChange, error) {
		changes, err := s.readChanges(ctx, name, after, latest, check)
		if len(changes) > 0 {
			check = false
		}
		return changes, err
	}), nil
}

// readChanges reads the changes of name after after from the event log:
// only the latest when latest is set or (when check is set) the log no
// longer keeps what follows after, or after is beyond the latest change.
func (s *Store) readChanges(ctx context.Context, name string, after int64, latest, check bool) ([]tokens.LeaseChange, error) {
	gap := false
	if check {
		var floor int64
		if err := s.pool.QueryRow(ctx, s.wq.floor).Scan(&floor); err != nil {
			return nil, &tokens.UnavailableError{Op: "watch", Resource: name, Err: err}
		}
		gap = after < floor-1
	}
	if latest || check {
		c, err := scanChange(name, s.pool.QueryRow(ctx, s.wq.latest, name))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil, nil
		case err != nil:
			return nil, &tokens.UnavailableError{Op: "watch", Resource: name, Err: err}
		case c.Seq > after && (latest || gap):
			c.Gap = gap
			return []tokens.LeaseChange{c}, nil
		case c.Seq < after: // beyond the latest: ids restarted
			c.Gap = true
			return []tokens.LeaseChange{c}, nil
		case c.Seq == after || latest:
			return nil, nil
		}
	}
	var out []tokens.LeaseChange
	for {
		page, err := s.readPage(ctx, name, after)
		if err != nil {
			return nil, &tokens.UnavailableError{Op: "watch", Resource: name, Err: err}
		}
		out = append(out, page...)
		if len(page) < maxEventsRead {
			return out, nil
		}
		after = page[len(page)-1].Seq
	}
}

// readPage reads up to maxEventsRead changes of name after after.
func (s *Store) readPage(ctx context.Context, name string, after int64) ([]tokens.LeaseChange, error) {
	rows, err := s.pool.Query(ctx, s.wq.after, name, after)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []tokens.LeaseChange
	for rows.Next() {
		c, err := scanChange(name, rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// scanChange reads one row of eventColumns.
func scanChange(name string, row pgx.Row) (tokens.LeaseChange, error) {
	var c tokens.LeaseChange
	l, err := scanLease(name, row, &c.Seq)
	c.Lease = l
	return c, err
}
