package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/tokens/internal/pgretry"

	"github.com/fencegw/fencegw/tokens"
)

// Acquire grants lease name to holder for ttl, owned by by.Name, when it is
// free, expired or already held by holder; see tokens.LeaseStore. The TTL is kept in whole
// milliseconds (a finer ttl is truncated, and Grant.TTL says so) and every
// deadline is computed by the database: ExpiresAt is now() + ttl on its
// clock, now() being the start of the grant's transaction.
//
// One READ COMMITTED transaction locks the lease row, then the HWM row of
// resource name (always in that order, so acquires never deadlock), and
// sets both: the grant's epoch is one above the lease's previous epoch and
// the HWM, and becomes the HWM and the highest epoch issued for name. The
// refusals are decided under those locks and roll everything back: a live
// lease of another holder returns *tokens.LeaseHeldError, holder's live
// lease owned by a caller other than by *tokens.LeaseOwnedError, and a grant
// that would pass 2^63-1 *tokens.EpochExhaustedError. Any other failure
// returns an *tokens.UnavailableError: the grant may or may not have been
// committed.
func (s *Store) Acquire(ctx context.Context, name, holder string, t tokens.Terms, by tokens.Caller) (tokens.Grant, error) {
	if err := tokens.ValidateAcquire(name, holder, t, by); err != nil {
		return tokens.Grant{}, err
	}
	if err := ctx.Err(); err != nil {
		return tokens.Grant{}, &tokens.UnavailableError{Op: "acquire", Resource: name, Err: err}
	}
	g, err := s.acquire(ctx, name, holder, t.TTL.Milliseconds(), t.LockDelay.Milliseconds(), by)
	if errors.Is(err, pgx.ErrNoRows) {
		// The row was there for the INSERT and gone for the lock: a reclaim
		// deleted it between them (see ReclaimLeases). Nothing was changed;
		// a second try creates the row.
		g, err = s.acquire(ctx, name, holder, t.TTL.Milliseconds(), t.LockDelay.Milliseconds(), by)
	}
	switch {
	case tokens.IsVerdict(err):
		return tokens.Grant{}, err
	case err != nil:
		return tokens.Grant{}, &tokens.UnavailableError{Op: "acquire", Resource: name, Err: err}
	}
	return g, nil
}

func (s *Store) acquire(ctx context.Context, name, holder string, ttlMS, delayMS int64, by tokens.Caller) (tokens.Grant, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return tokens.Grant{}, fmt.Errorf("begin: %w", err)
	}
	defer rollback(ctx, tx)

	// Lock the lease row, creating it if it is missing. A concurrent
	// creator's INSERT makes this one wait for its commit, after which the
	// row exists and is locked below; so the name is locked either way.
	var g tokens.Grant
	var created bool
	err = tx.QueryRow(ctx, s.q.leaseCreate, name, holder, ttlMS).Scan(&created)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		var delayLeft int64
		prev, err := scanLease(name, tx.QueryRow(ctx, s.q.leaseLock, name), &delayLeft)
		if err != nil {
			return tokens.Grant{}, fmt.Errorf("lock lease: %w", err)
		}
		if prev.Held && prev.Holder != holder {
			return tokens.Grant{}, &tokens.LeaseHeldError{Name: name, Holder: prev.Holder,
				Epoch: prev.Epoch, ExpiresAt: prev.ExpiresAt}
		}
		if prev.Held && !by.MayUse(prev.Owner) {
			return tokens.Grant{}, &tokens.LeaseOwnedError{Name: name, Owner: prev.Owner, Caller: by.Name, Op: "acquire"}
		}
		if delayLeft > 0 {
			return tokens.Grant{}, &tokens.LockDelayError{Name: name, Holder: prev.Holder, Epoch: prev.Epoch,
				Left: time.Duration(delayLeft) * time.Millisecond}
		}
		g.Previous = &prev
	case err != nil:
		return tokens.Grant{}, fmt.Errorf("create lease: %w", err)
	}

	var base int64 // the lease's epoch: the grant must be above it
	if g.Previous != nil {
		base = g.Previous.Epoch
	}
	if base == math.MaxInt64 {
		return tokens.Grant{}, &tokens.EpochExhaustedError{Name: name, Epoch: base}
	}
	// Fence on grant: raise the HWM in the same transaction, under the
	// HWM row's lock, to one above both the lease and the HWM.
	var epoch int64
	err = tx.QueryRow(ctx, s.q.fenceGrant, name, base+1).Scan(&epoch)
	switch {
	case errors.Is(err, pgx.ErrNoRows): // the HWM is 2^63-1
		return tokens.Grant{}, &tokens.EpochExhaustedError{Name: name, Epoch: math.MaxInt64}
	case err != nil:
		return tokens.Grant{}, fmt.Errorf("raise HWM: %w", err)
	case epoch <= base:
		return tokens.Grant{}, fmt.Errorf("database granted epoch %d over lease epoch %d", epoch, base)
	}

	g.Lease, err = scanLease(name, tx.QueryRow(ctx, s.q.leaseGrant, name, holder, epoch, ttlMS, by.Name, delayMS))
	if err != nil {
		return tokens.Grant{}, fmt.Errorf("grant lease: %w", err)
	}
	if g.Epoch != epoch || g.Holder != holder || !g.Held || g.Owner != by.Name {
		return tokens.Grant{}, fmt.Errorf("database stored lease %+v for epoch %d", g.Lease, epoch)
	}
	if err := tx.Commit(ctx); err != nil {
		return tokens.Grant{}, fmt.Errorf("commit: %w", err)
	}
	return g, nil
}

// rollback ends tx if it is still open. The rollback gets its own short
// deadline so a cancelled ctx still ends the transaction on the server; if
// it fails, pgx closes the connection, which ends it as well.
func rollback(ctx context.Context, tx pgx.Tx) {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = tx.Rollback(c) // pgx.ErrTxClosed after a commit
}

// Renew extends holder's live lease at epoch by its TTL, from now() on the
// database's clock; see tokens.LeaseStore. It is one conditional UPDATE,
// which checks the owner too, and never changes the epoch or the owner, nor
// moves the deadline back. When the lease expired, was never acquired, or
// is another holder's or another epoch's, it returns a
// *tokens.LeaseLostError whose Current is the lease read right after the
// refusal; when that read finds holder's grant at epoch owned by a caller
// other than by, a *tokens.LeaseOwnedError. A failure of the database
// returns an *tokens.UnavailableError: the renewal may or may not have been
// committed.
func (s *Store) Renew(ctx context.Context, name, holder string, epoch int64, by tokens.Caller) (tokens.Lease, error) {
	if err := tokens.ValidateHeld(name, holder, epoch, by); err != nil {
		return tokens.Lease{}, err
	}
	if err := ctx.Err(); err != nil {
		return tokens.Lease{}, &tokens.UnavailableError{Op: "renew", Resource: name, Err: err}
	}
	l, err := scanLease(name, s.pool.QueryRow(ctx, s.q.renew, name, holder, epoch, by.Name, by.Admin))
	switch {
	case err == nil:
		if l.Holder != holder || l.Epoch != epoch || !l.Held {
			return tokens.Lease{}, &tokens.UnavailableError{Op: "renew", Resource: name,
				Err: fmt.Errorf("database renewed %+v for %q at epoch %d", l, holder, epoch)}
		}
		return l, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return tokens.Lease{}, &tokens.UnavailableError{Op: "renew", Resource: name, Err: err}
	}
	return tokens.Lease{}, s.lost(ctx, "renew", name, holder, epoch, by)
}

// Release ends holder's lease at epoch now on the database's clock, keeping
// its epoch so the next grant raises it; see tokens.LeaseStore. A lease that
// already lapsed or was released keeps its earlier deadline, and releasing
// it again succeeds. When the lease was never acquired or another holder or
// epoch was granted since, it returns a *tokens.LeaseLostError; when the
// grant is holder's at epoch but owned by a caller other than by, a
// *tokens.LeaseOwnedError (the owner is checked in the UPDATE itself). A
// failure of the database returns an *tokens.UnavailableError.
func (s *Store) Release(ctx context.Context, name, holder string, epoch int64, by tokens.Caller) error {
	if err := tokens.ValidateHeld(name, holder, epoch, by); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return &tokens.UnavailableError{Op: "release", Resource: name, Err: err}
	}
	tag, err := s.pool.Exec(ctx, s.q.release, name, holder, epoch, by.Name, by.Admin)
	switch {
	case err != nil:
		return &tokens.UnavailableError{Op: "release", Resource: name, Err: err}
	case tag.RowsAffected() == 1:
		return nil
	}
	return s.lost(ctx, "release", name, holder, epoch, by)
}

// Mark returns the HWM of resource and the life of the lease of that name
// in one statement, on the database's clock; see tokens.Store. Left is
// counted from the start of the statement, which is after the call, and
// rounded down to the microsecond. Like Current, it runs once more on a
// fresh connection when its pooled one turns out broken.
func (s *Store) Mark(ctx context.Context, resource string) (tokens.Mark, error) {
	if err := tokens.ValidateResource(resource); err != nil {
		return tokens.Mark{}, err
	}
	if err := ctx.Err(); err != nil {
		return tokens.Mark{}, &tokens.UnavailableError{Op: "mark", Resource: resource, Err: err}
	}
	var (
		m      tokens.Mark
		leftUS int64
	)
	err := pgretry.QueryRow(ctx, s.pool, s.q.mark, []any{resource}, &m.HWM, &m.Lease.Epoch, &leftUS, &m.Lease.Released)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return tokens.Mark{}, nil
	case err != nil:
		return tokens.Mark{}, &tokens.UnavailableError{Op: "mark", Resource: resource, Err: err}
	}
	m.Lease.Left = time.Duration(leftUS) * time.Microsecond
	return m, nil
}

// Lease returns the state of lease name, Held decided by the database's
// clock, or tokens.ErrLeaseNotFound if it was never acquired. A failure of
// the database returns an *tokens.UnavailableError.
func (s *Store) Lease(ctx context.Context, name string) (tokens.Lease, error) {
	if err := tokens.ValidateResource(name); err != nil {
		return tokens.Lease{}, err
	}
	l, err := s.lease(ctx, name)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return tokens.Lease{}, tokens.ErrLeaseNotFound
	case err != nil:
		return tokens.Lease{}, &tokens.UnavailableError{Op: "lease", Resource: name, Err: err}
	}
	return l, nil
}

func (s *Store) lease(ctx context.Context, name string) (tokens.Lease, error) {
	if err := ctx.Err(); err != nil {
		return tokens.Lease{}, err
	}
	return scanLease(name, s.pool.QueryRow(ctx, s.q.leaseGet, name))
}

// lost builds the refusal of a renew or release from the lease read with a
// fresh statement: a *tokens.LeaseOwnedError when it is holder's grant at
// epoch and by may not use it, a *tokens.LeaseLostError otherwise, or an
// *tokens.UnavailableError if it cannot be read.
func (s *Store) lost(ctx context.Context, op, name, holder string, epoch int64, by tokens.Caller) error {
	cur, err := s.lease(ctx, name)
	var reason string
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		cur, reason = tokens.Lease{}, "never acquired"
	case err != nil:
		return &tokens.UnavailableError{Op: op, Resource: name,
			Err: fmt.Errorf("read lease after refusing %s: %w", op, err)}
	case cur.Holder != holder || cur.Epoch != epoch:
		reason = tokens.LostReason(true, cur, holder, epoch)
	case !by.MayUse(cur.Owner):
		return &tokens.LeaseOwnedError{Name: name, Owner: cur.Owner, Caller: by.Name, Op: op}
	default:
		reason = "expired"
	}
	return &tokens.LeaseLostError{Name: name, Holder: holder, Epoch: epoch, Current: cur, Reason: reason}
}

// scanLease reads the leaseColumns of lease name from row, and then into
// more the columns that follow them.
func scanLease(name string, row pgx.Row, more ...any) (tokens.Lease, error) {
	l := tokens.Lease{Name: name}
	var ttlMS, delayMS int64
	dest := append([]any{&l.Holder, &l.Epoch, &ttlMS, &l.ExpiresAt, &l.Held, &l.Owner, &delayMS, &l.Released, &l.Version}, more...)
	if err := row.Scan(dest...); err != nil {
		return tokens.Lease{}, err
	}
	l.TTL = time.Duration(ttlMS) * time.Millisecond
	l.LockDelay = time.Duration(delayMS) * time.Millisecond
	l.ExpiresAt = l.ExpiresAt.UTC()
	return l, nil
}
