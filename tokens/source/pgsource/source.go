package pgsource

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/tokens/internal/pgconnect"
	"github.com/fencegw/fencegw/tokens/internal/pgprimary"
	"github.com/fencegw/fencegw/tokens/internal/pgretry"
	"github.com/fencegw/fencegw/tokens/source"
)

// Source reads leaders from a PostgreSQL lease table. It implements
// source.Source and is safe for concurrent use. Create it with Open.
type Source struct {
	pool  *pgxpool.Pool
	query string
	table string // for messages

	closer source.Closer
}

var _ source.Source = (*Source)(nil)

// Open validates o (see Options.Validate), connects a pool to the primary
// named by o.DSN, and checks that the table and its four columns exist and
// have usable types, so that a bad configuration fails here with an error
// naming the Options field, not on the first request. It fails when the
// server cannot be reached within ctx.
//
// Every pooled connection is checked to be to a primary (not in recovery),
// in addition to any target_session_attrs check the DSN asks for. Opening a
// connection takes at most the DSN's connect_timeout, or
// pgconnect.DefaultTimeout (5 s) when it sets none, so that a connection
// begun during a partition gives up soon after it heals.
func Open(ctx context.Context, o Options) (*Source, error) {
	o = o.WithDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(o.DSN)
	if err != nil {
		return nil, fmt.Errorf("pgsource: DSN: %w", err)
	}
	pgprimary.Require(cfg.ConnConfig)
	pgconnect.Bound(cfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgsource: %w", err)
	}
	s := &Source{pool: pool, query: o.query(), table: o.Table}
	if err := verify(ctx, pool, o); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Current reads the leader of resource from the primary, in one statement
// whose liveness test uses the database's now():
//
//	SELECT epoch, holder::text, expires_at > now() FROM table WHERE name = $1
//
// No row gives source.Leader{} (no leader). Held is true only for a
// positive epoch (a NULL epoch reads as 0, a row never taken); Live only
// when holder is not NULL and expires_at is not NULL and later than now(). More than one row for the name is an error (the name column
// must be unique). Every error wraps a *tokens.UnavailableError: the caller
// must fail closed. After Close, it also wraps source.ErrClosed.
func (s *Source) Current(ctx context.Context, resource string) (source.Leader, error) {
	return source.ReadLeader(ctx, resource, s.current)
}

// current reads the leader of resource, once more on a fresh connection
// when the pooled one was broken (the read is idempotent).
func (s *Source) current(ctx context.Context, resource string) (l source.Leader, err error) {
	if s.closer.Closed() {
		return source.Leader{}, fmt.Errorf("pgsource: %w", source.ErrClosed)
	}
	err = pgretry.Do(ctx, s.pool, func() (err error) {
		l, err = s.read(ctx, resource)
		return err
	})
	return l, err
}

func (s *Source) read(ctx context.Context, resource string) (source.Leader, error) {
	rows, err := s.pool.Query(ctx, s.query, resource)
	if err != nil {
		return source.Leader{}, fmt.Errorf("pgsource: read leader of %q from %s: %w", resource, s.table, err)
	}
	defer rows.Close()
	var (
		l source.Leader
		n int
	)
	for rows.Next() {
		if n++; n > 1 {
			break
		}
		var (
			epoch  *int64
			holder *string
			live   *bool
		)
		if err := rows.Scan(&epoch, &holder, &live); err != nil {
			return source.Leader{}, fmt.Errorf("pgsource: read leader of %q from %s: %w", resource, s.table, err)
		}
		if epoch != nil {
			l.Epoch = *epoch
		}
		// The seed's epochs start at 1: a row whose epoch is NULL or not
		// positive was never taken, and names no leader.
		l.Held = l.Epoch > 0
		if holder != nil {
			l.Holder = *holder
		}
		l.Live = holder != nil && live != nil && *live
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return source.Leader{}, fmt.Errorf("pgsource: read leader of %q from %s: %w", resource, s.table, err)
	}
	if n > 1 {
		return source.Leader{}, fmt.Errorf("pgsource: %s has several rows named %q: %w", s.table, resource, errNotUnique)
	}
	return l, nil
}

// errNotUnique is wrapped by Current when the name column holds duplicates.
var errNotUnique = errors.New("name column is not unique")

// Close closes the pool, waiting for reads in flight to return their
// connections. Current then fails with source.ErrClosed. Close always
// returns nil and may be called more than once.
func (s *Source) Close() error {
	return s.closer.Close(func() error {
		s.pool.Close()
		return nil
	})
}
