package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/internal/pgconnect"
	"github.com/fencegw/fencegw/tokens/internal/pgprimary"
	"github.com/fencegw/fencegw/tokens/internal/pgretry"
)

// Store is a tokens.Store over a PostgreSQL database, through a pgx
// connection pool. It is safe for concurrent use.
type Store struct {
	pool      *pgxpool.Pool
	q         queries
	iq        idemQueries
	aq        auditQueries
	wq        watchQueries
	lq        liveQueries
	listen    *listener
	closeOnce sync.Once
}

var _ tokens.Store = (*Store)(nil)

// Open connects to the database named by dsn (a libpq URL or keyword/value
// string; pool_* parameters configure the pool), creates or migrates the
// schema, and returns the store. Connections are made lazily after that;
// ctx bounds Open only.
//
// Every connection must reach a primary (pg_is_in_recovery() false), in
// addition to any target_session_attrs in dsn, and runs with
// synchronous_commit on if the server default is off.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	pgprimary.Require(cfg.ConnConfig)
	pgconnect.Bound(cfg.ConnConfig)
	cfg.AfterConnect = durableCommits
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	if err := migrate(ctx, pool, &o); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: schema: %w", err)
	}
	return &Store{pool: pool, q: newQueries(&o), iq: newIdemQueries(o.ident(idemTable)), aq: newAuditQueries(o.ident(auditTable)),
		wq: newWatchQueries(o.ident(eventTable)), lq: newLiveQueries(o.ident(leaseTable)), listen: &listener{pool: pool}}, nil
}

// DefaultConnectTimeout bounds opening a connection when the DSN sets no
// connect_timeout (see pgconnect).
const DefaultConnectTimeout = pgconnect.DefaultTimeout

// Current returns the HWM of resource, or 0 if none was recorded. It reads
// from the primary with a fresh statement, so it reflects every Advance that
// returned before it was called.
//
// Current and Advance are idempotent: each runs once more on a fresh
// connection when its pooled one turns out broken (a server restart or
// failover, a terminated session), instead of failing the write.
func (s *Store) Current(ctx context.Context, resource string) (int64, error) {
	if err := tokens.ValidateResource(resource); err != nil {
		return 0, err
	}
	hwm, err := s.read(ctx, resource)
	if err != nil {
		return 0, &tokens.UnavailableError{Op: "current", Resource: resource, Err: err}
	}
	return hwm, nil
}

func (s *Store) read(ctx context.Context, resource string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var hwm int64
	err := pgretry.QueryRow(ctx, s.pool, s.q.current, []any{resource}, &hwm)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return hwm, nil
}

// Advance raises the HWM of resource to epoch unless epoch is below it or,
// when a lease named resource was ever granted, above the highest epoch
// issued for it. Admission is one atomic statement committed before Advance
// returns. A stale epoch returns a *tokens.StaleEpochError carrying the HWM
// read right after the refusal; an epoch never issued returns a
// *tokens.EpochNotIssuedError carrying the highest issued epoch read then.
// If Advance returns an *tokens.UnavailableError, the raise may or may not
// have been committed.
func (s *Store) Advance(ctx context.Context, resource string, epoch int64) (int64, error) {
	if err := tokens.ValidateAdvance(resource, epoch); err != nil {
		return 0, err
	}
	// A refusal is re-read with a fresh statement. The HWM only grows, so a
	// stale epoch stays stale; but a grant may issue epoch between the
	// refusal and the read, in which case the epoch is admissible now and
	// Advance tries again. Each retry needs another grant in that window.
	const attempts = 3
	for attempt := 1; ; attempt++ {
		hwm, admitted, err := s.advance(ctx, resource, epoch)
		switch {
		case err != nil:
			return 0, &tokens.UnavailableError{Op: "advance", Resource: resource, Err: err}
		case admitted:
			return hwm, nil
		}
		current, issued, err := s.marks(ctx, resource)
		if err != nil {
			return 0, &tokens.UnavailableError{Op: "advance", Resource: resource,
				Err: fmt.Errorf("read HWM after refusing epoch %d: %w", epoch, err)}
		}
		switch {
		case epoch < current:
			return 0, &tokens.StaleEpochError{Resource: resource, Presented: epoch, Current: current}
		case issued > 0 && epoch > issued:
			return 0, &tokens.EpochNotIssuedError{Resource: resource, Presented: epoch, Issued: issued}
		case attempt == attempts:
			return 0, &tokens.UnavailableError{Op: "advance", Resource: resource,
				Err: fmt.Errorf("epoch %d refused %d times but HWM reads %d and highest issued %d",
					epoch, attempts, current, issued)}
		}
	}
}

// advance runs the conditional upsert once: admitted reports whether epoch
// was admitted, in which case hwm is it.
func (s *Store) advance(ctx context.Context, resource string, epoch int64) (hwm int64, admitted bool, err error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	err = pgretry.QueryRow(ctx, s.pool, s.q.advance, []any{resource, epoch}, &hwm)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, err
	case hwm != epoch:
		return 0, false, fmt.Errorf("database stored epoch %d for %d", hwm, epoch)
	}
	return hwm, true, nil
}

// marks reads the HWM of resource and the highest epoch issued for it, both
// 0 if the resource has no row, with a fresh statement (READ COMMITTED: a
// new snapshot).
func (s *Store) marks(ctx context.Context, resource string) (hwm, issued int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	err = pgretry.QueryRow(ctx, s.pool, s.q.marks, []any{resource}, &hwm, &issued)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, nil
	}
	return hwm, issued, err
}

// Ping returns nil if a connection to the primary can be had and answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return &tokens.UnavailableError{Op: "ping", Err: err}
	}
	return nil
}

// Exclusive reports false: other processes may share the database, so a
// Fence must ask the store rather than trust its cache.
func (s *Store) Exclusive() bool { return false }

// Close closes the pool, waiting for connections in use to be returned.
// Later calls do nothing. It always returns nil.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.listen.stop()
		s.pool.Close()
	})
	return nil
}
