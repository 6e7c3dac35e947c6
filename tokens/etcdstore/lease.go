package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// cleanupTimeout bounds the best-effort revocation of an etcd lease that a
// failed Acquire granted but did not use. It runs even when the caller's
// context has ended, so a failing Acquire may return up to this much later
// than its context.
const cleanupTimeout = time.Second

// Acquire grants the lease name to holder for ttl, owned by by.Name, when it
// is free, lapsed, released or already held by holder; see
// tokens.LeaseStore.
//
// It reads the lease record, the alive key, the HWM and the issued key in
// one linearizable transaction. When the alive key exists and names another
// holder it returns *tokens.LeaseHeldError, whose ExpiresAt is estimated
// from the remaining TTL of that holder's etcd lease; when it names holder
// but its record's owner is a caller by may not act for,
// *tokens.LeaseOwnedError; when the record's epoch, the HWM or the issued
// epoch is already 2^63-1, *tokens.EpochExhaustedError. A TTL that is not
// whole seconds, or is below MinLeaseTTL, or that etcd raises to a higher
// minimum, is refused with an error wrapping tokens.ErrInvalidLease: etcd
// would keep the lease longer than the ExpiresAt reported. Otherwise it
// grants an etcd lease of ttl and, in one transaction conditioned on
// none of the four keys having changed since the read, writes the record
// (naming by.Name as owner), the alive key attached to the new etcd lease, and the new epoch, one above
// the record's epoch and the HWM, as both HWM and issued epoch. When the
// condition fails it decides again from the new state, until the
// transaction succeeds, a refusal is decided, or ctx ends: every refusal is
// decided from a state that the transaction would have required unchanged. A holder's
// previous etcd lease is revoked after its re-acquire succeeds (best
// effort: it no longer carries any key).
//
// The grant's ExpiresAt is ttl after the moment Acquire asked etcd for the
// lease, on this process's clock: no later than the etcd lease lapses.
// Previous, when the lease was acquired before, has the previous grant with
// Held as it was read and ExpiresAt the moment the new grant completed (an
// upper bound on when it lapsed or was superseded).
//
// Invalid arguments return an error wrapping tokens.ErrInvalidResource or
// tokens.ErrInvalidLease; any failure of the cluster or a corrupt key a
// *tokens.UnavailableError, in which case the
// grant may or may not have happened (Acquire revokes the etcd lease it
// granted, so a grant that did happen ends at once).
func (s *Store) Acquire(ctx context.Context, name, holder string, t tokens.Terms, by tokens.Caller) (tokens.Grant, error) {
	const op = "acquire"
	if err := tokens.ValidateAcquire(name, holder, t, by); err != nil {
		return tokens.Grant{}, err
	}
	if err := tokens.ValidateStoreTTL(s, t.TTL); err != nil {
		return tokens.Grant{}, err
	}
	st, err := s.read(ctx, op, name, true)
	if err != nil {
		return tokens.Grant{}, err
	}

	var l etcdLeases
	fail := func(err error) (tokens.Grant, error) {
		s.revokeLeases(ctx, &l)
		return tokens.Grant{}, err
	}
	for {
		epoch, err := s.nextEpoch(ctx, name, holder, by, st)
		if err != nil {
			return fail(err)
		}
		if err := ctx.Err(); err != nil {
			return fail(unavailable(op, name, err))
		}
		if err := s.grantLeases(ctx, op, name, t, &l); err != nil {
			return fail(err)
		}
		rec := l.record(holder, epoch, t, by)
		tr, err := s.grantTxn(ctx, name, st, rec)
		if isLeaseNotFound(err) {
			// An etcd lease lapsed before the put: slow retries. Start over
			// with fresh ones.
			s.revokeLeases(ctx, &l)
			if st, err = s.readState(ctx, name, true); err != nil {
				return fail(unavailable(op, name, err))
			}
			continue
		}
		if err != nil {
			return fail(unavailable(op, name, fmt.Errorf("grant transaction: %w", err)))
		}
		if !tr.Succeeded {
			if st, err = s.parseState(name, true, tr.Responses); err != nil {
				return fail(unavailable(op, name, err))
			}
			continue
		}
		if st.alive && st.aliveID != l.granted {
			s.revokeQuietly(ctx, st.aliveID) // holder's own previous grant
		}
		if st.delay && st.delayID != l.delayed {
			s.revokeQuietly(ctx, st.delayID)
		}
		g := grantOf(name, rec, t.TTL, l.grantedAt, st)
		g.Version = tr.Header.Revision // the record's ModRevision now
		return g, nil
	}
}

// etcdLeases are the etcd leases one Acquire grants and has not yet used:
// the record's and, with a lock-delay, the delay key's.
type etcdLeases struct {
	granted, delayed clientv3.LeaseID
	grantedAt        time.Time
	etcdTTL          int64 // the TTL etcd granted the record's lease
}

// grantLeases grants l's leases for terms t unless l holds them already.
// A failure of the cluster is a *tokens.UnavailableError; a TTL etcd did
// not grant exactly, checkGranted's error.
func (s *Store) grantLeases(ctx context.Context, op, name string, t tokens.Terms, l *etcdLeases) error {
	if l.granted != 0 {
		return nil
	}
	l.grantedAt = s.clock.Now()
	var err error
	if l.granted, l.etcdTTL, err = s.grant(ctx, ttlSeconds(t.TTL)); err != nil {
		return unavailable(op, name, err)
	}
	if err := s.checkGranted(ttlSeconds(t.TTL), l.etcdTTL); err != nil {
		return err
	}
	if t.LockDelay > 0 {
		if l.delayed, _, err = s.grant(ctx, l.etcdTTL+ttlSeconds(t.LockDelay)); err != nil {
			return unavailable(op, name, err)
		}
	}
	return nil
}

// revokeLeases revokes, quietly, the leases l holds, and forgets them.
func (s *Store) revokeLeases(ctx context.Context, l *etcdLeases) {
	for _, id := range []clientv3.LeaseID{l.granted, l.delayed} {
		if id != 0 {
			s.revokeQuietly(ctx, id)
		}
	}
	l.granted, l.delayed = 0, 0
}

// record is the lease record of a grant to holder at epoch on l's leases.
func (l *etcdLeases) record(holder string, epoch int64, t tokens.Terms, by tokens.Caller) leaseRecord {
	return leaseRecord{
		Holder:          holder,
		Epoch:           epoch,
		TTLMillis:       t.TTL.Milliseconds(),
		EtcdLease:       int64(l.granted),
		EtcdTTL:         l.etcdTTL,
		GrantedAt:       l.grantedAt.UTC().Format(time.RFC3339Nano),
		Owner:           by.Name,
		LockDelayMillis: t.LockDelay.Milliseconds(),
		DelayLease:      int64(l.delayed),
	}
}

// grant asks etcd for a lease of ttl seconds and returns its ID and the
// TTL etcd granted.
func (s *Store) grant(ctx context.Context, ttl int64) (clientv3.LeaseID, int64, error) {
	resp, err := s.cli.Grant(ctx, ttl)
	if err != nil {
		return 0, 0, fmt.Errorf("granting an etcd lease of %ds: %w", ttl, err)
	}
	if resp.Error != "" {
		return 0, 0, fmt.Errorf("granting an etcd lease of %ds: %s", ttl, resp.Error)
	}
	return resp.ID, resp.TTL, nil
}

// nextEpoch is the epoch a grant to holder by by would issue from st, or
// the verdict refusing it: another holder's live lease, holder's live
// lease owned by a key by may not act for, or no epoch left.
func (s *Store) nextEpoch(ctx context.Context, name, holder string, by tokens.Caller, st leaseState) (int64, error) {
	if st.live() && st.rec.Holder != holder {
		return 0, &tokens.LeaseHeldError{Name: name, Holder: st.rec.Holder, Epoch: st.rec.Epoch,
			ExpiresAt: s.expiresAt(ctx, st)}
	}
	if st.live() && !by.MayUse(st.rec.Owner) {
		return 0, &tokens.LeaseOwnedError{Name: name, Owner: st.rec.Owner, Caller: by.Name, Op: "acquire"}
	}
	if !st.live() && st.delay {
		return 0, &tokens.LockDelayError{Name: name, Holder: st.rec.Holder, Epoch: st.rec.Epoch,
			Left: s.delayLeft(ctx, st)}
	}
	base := max(st.rec.Epoch, st.hwm, st.issued)
	if base == math.MaxInt64 {
		return 0, &tokens.EpochExhaustedError{Name: name, Epoch: base}
	}
	return base + 1, nil
}

// grantTxn writes the grant rec in one transaction, on condition that none
// of the lease's keys changed since st was read; otherwise it reads them
// again (the Else branch's responses).
func (s *Store) grantTxn(ctx context.Context, name string, st leaseState, rec leaseRecord) (*clientv3.TxnResponse, error) {
	delay := clientv3.OpDelete(s.delayKey(name))
	if rec.DelayLease != 0 {
		delay = clientv3.OpPut(s.delayKey(name), encodeAlive(rec.Holder, rec.Epoch), clientv3.WithLease(clientv3.LeaseID(rec.DelayLease)))
	}
	return s.cli.Txn(ctx).
		If(
			unchanged(s.leaseKey(name), st.recRev),
			unchanged(s.aliveKey(name), st.aliveRev),
			unchanged(s.delayKey(name), st.delayRev),
			unchanged(s.key(name), st.hwmRev),
			unchanged(s.issuedKey(name), st.issuedRev),
		).
		Then(
			clientv3.OpPut(s.leaseKey(name), encodeRecord(rec)),
			clientv3.OpPut(s.aliveKey(name), encodeAlive(rec.Holder, rec.Epoch), clientv3.WithLease(clientv3.LeaseID(rec.EtcdLease))),
			delay,
			clientv3.OpPut(s.key(name), encodeEpoch(rec.Epoch)),
			clientv3.OpPut(s.issuedKey(name), encodeEpoch(rec.Epoch)),
		).
		Else(s.readOps(name, true)...).
		Commit()
}

// grantOf is the answer to a grant of rec made at grantedAt over the state
// st it replaced.
func grantOf(name string, rec leaseRecord, ttl time.Duration, grantedAt time.Time, st leaseState) tokens.Grant {
	g := tokens.Grant{Lease: tokens.Lease{
		Name:      name,
		Holder:    rec.Holder,
		Epoch:     rec.Epoch,
		TTL:       ttl,
		LockDelay: rec.lockDelay(),
		ExpiresAt: grantedAt.Add(ttl).UTC(),
		Held:      true,
		Owner:     rec.Owner,
	}}
	if st.found {
		g.Previous = &tokens.Lease{
			Name:      name,
			Holder:    st.rec.Holder,
			Epoch:     st.rec.Epoch,
			TTL:       st.rec.ttl(),
			ExpiresAt: time.Now().UTC(), // the grant completed: it lapsed or was superseded by now
			Held:      st.live(),
			Owner:     st.rec.Owner,
		}
	}
	return g
}

// Renew extends holder's live lease at epoch by its TTL from now, on the
// cluster's clock; see tokens.LeaseStore. It never changes the epoch or any
// key: it reads the record and alive key linearizably and, if they name
// holder at epoch and the alive key exists, sends one keep-alive for the
// etcd lease, which restarts its full etcd TTL at the leader. When the
// record names another holder or epoch, the alive key is gone (the lease
// lapsed or was released) or etcd no longer knows the lease (it lapsed after
// the read), it returns *tokens.LeaseLostError; when the record names holder
// at epoch but an owner by may not act for, *tokens.LeaseOwnedError. The
// keep-alive extends only the etcd lease of the grant read, whose owner never
// changes, so the check holds for the lease it renews. A renewal can never
// revive a lapsed lease: etcd refuses keep-alives of expired leases.
//
// The returned ExpiresAt is the TTL after the keep-alive was sent, on this
// process's clock. Invalid arguments return an error wrapping
// tokens.ErrInvalidResource or tokens.ErrInvalidLease; failures of the
// cluster or corrupt keys a *tokens.UnavailableError.
func (s *Store) Renew(ctx context.Context, name, holder string, epoch int64, by tokens.Caller) (tokens.Lease, error) {
	const op = "renew"
	st, err := s.held(ctx, op, name, holder, epoch, by)
	if err != nil {
		return tokens.Lease{}, err
	}
	if !st.live() {
		return tokens.Lease{}, s.lostError(ctx, name, holder, epoch, st, "lapsed or released")
	}
	start := time.Now()
	if _, err := s.cli.KeepAliveOnce(ctx, st.aliveID); err != nil {
		if isLeaseNotFound(err) {
			st.alive = false
			return tokens.Lease{}, s.lostError(ctx, name, holder, epoch, st, "lapsed")
		}
		return tokens.Lease{}, unavailable(op, name, fmt.Errorf("keep-alive of etcd lease %x: %w", int64(st.aliveID), err))
	}
	// The delay lease after the alive one: it keeps outliving it by the
	// delay. If this fails the renewal is reported failed; the holder
	// renews again.
	if st.delay {
		if _, err := s.cli.KeepAliveOnce(ctx, st.delayID); err != nil {
			return tokens.Lease{}, unavailable(op, name, fmt.Errorf("keep-alive of etcd lease %x: %w", int64(st.delayID), err))
		}
	}
	// Tell watchers: a keep-alive changes no key.
	pr, err := s.cli.Put(ctx, s.renewedKey(name), strconv.FormatInt(epoch, 10), clientv3.WithLease(st.aliveID))
	if err != nil && !isLeaseNotFound(err) {
		return tokens.Lease{}, unavailable(op, name, fmt.Errorf("recording the renewal: %w", err))
	}
	version := max(st.recRev, st.renewedRev)
	if err == nil {
		version = max(version, pr.Header.Revision)
	}
	return tokens.Lease{
		Name:      name,
		Holder:    holder,
		Epoch:     epoch,
		TTL:       st.rec.ttl(),
		LockDelay: st.rec.lockDelay(),
		ExpiresAt: start.Add(st.rec.ttl()).UTC(),
		Held:      true,
		Version:   version,
		Owner:     st.rec.Owner,
	}, nil
}

// Release ends holder's lease at epoch now by revoking its etcd lease, which
// deletes the alive key; the record keeps the epoch so that the next grant
// raises it. See tokens.LeaseStore. An etcd lease that already lapsed or was
// revoked counts as released, so a retried Release succeeds. When the
// record names another holder or epoch, or the lease was never acquired, it
// returns *tokens.LeaseLostError; when it names holder at epoch but an owner
// by may not act for, *tokens.LeaseOwnedError. Invalid arguments return an error wrapping
// tokens.ErrInvalidResource or tokens.ErrInvalidLease; failures of the
// cluster or corrupt keys a *tokens.UnavailableError.
//
// Releasing a live grant first marks its record released and deletes its
// delay key, in one transaction conditioned on the grant still being live:
// the end is clean, and the next grant skips the lock-delay. (Should the
// revocation then fail, the grant lapses at its TTL, still clean.)
// Releasing a grant that lapsed without a release revokes nothing: its
// delay key keeps the lock-delay running to its end, whoever releases it
// and however often. So is a grant whose etcd lease has less than a second
// left when the release reads it (etcd reports whole seconds, and deletes
// an expired lease's keys up to about half a second late): it is left to
// lapse, and its lock-delay runs.
//
// Acquire refuses a TTL etcd cannot keep exactly (see MinLeaseTTL and
// LeaseTTLStep), so no grant's etcd lease outlives the ExpiresAt it
// reported by more than the time etcd takes to delete its keys.
func (s *Store) Release(ctx context.Context, name, holder string, epoch int64, by tokens.Caller) error {
	const op = "release"
	st, err := s.held(ctx, op, name, holder, epoch, by)
	if err != nil {
		return err
	}
	if !st.alive && !st.rec.Released {
		return nil // lapsed uncleanly: its etcd lease is gone, its delay lease must stay
	}
	if st.live() {
		switch lapsing, err := s.lapsing(ctx, st); {
		case err != nil:
			return unavailable(op, name, err)
		case lapsing:
			return nil // too late to be clean: it lapses, its delay lease must stay
		}
		rec := st.rec
		rec.Released = true
		tr, err := s.cli.Txn(ctx).
			If(unchanged(s.leaseKey(name), st.recRev), unchanged(s.aliveKey(name), st.aliveRev)).
			Then(clientv3.OpPut(s.leaseKey(name), encodeRecord(rec)), clientv3.OpDelete(s.delayKey(name))).
			Commit()
		switch {
		case err != nil:
			return unavailable(op, name, fmt.Errorf("marking the grant released: %w", err))
		case !tr.Succeeded:
			// It lapsed, or was released or renewed meanwhile: decide
			// again from what is there now.
			return s.Release(ctx, name, holder, epoch, by)
		}
	}
	for _, id := range []clientv3.LeaseID{clientv3.LeaseID(st.rec.EtcdLease), clientv3.LeaseID(st.rec.DelayLease)} {
		if id == 0 {
			continue
		}
		if _, err := s.cli.Revoke(ctx, id); err != nil && !isLeaseNotFound(err) {
			return unavailable(op, name, fmt.Errorf("revoking etcd lease %x: %w", int64(id), err))
		}
	}
	return nil
}

// Lease returns the state of the lease name, read linearizably: Held when
// its alive key exists, ExpiresAt then estimated from the remaining TTL of
// its etcd lease (whole seconds, rounded down, so up to a second early), and
// the read time when not held (it lapsed or was released by then). A lease
// never acquired returns an error wrapping tokens.ErrLeaseNotFound; an
// invalid name one wrapping tokens.ErrInvalidResource; failures of the
// cluster or corrupt keys a *tokens.UnavailableError.
func (s *Store) Lease(ctx context.Context, name string) (tokens.Lease, error) {
	const op = "lease"
	if err := tokens.ValidateResource(name); err != nil {
		return tokens.Lease{}, err
	}
	st, err := s.read(ctx, op, name, false)
	if err != nil {
		return tokens.Lease{}, err
	}
	if !st.found {
		return tokens.Lease{}, fmt.Errorf("lease %q: %w", name, tokens.ErrLeaseNotFound)
	}
	return s.view(ctx, name, st), nil
}

// readState reads a lease's keys in one linearizable transaction.
func (s *Store) readState(ctx context.Context, name string, withEpochs bool) (leaseState, error) {
	tr, err := s.cli.Txn(ctx).Then(s.readOps(name, withEpochs)...).Commit()
	if err != nil {
		return leaseState{}, fmt.Errorf("reading lease keys: %w", err)
	}
	return s.parseState(name, withEpochs, tr.Responses)
}

// read reads the lease's state for op; failures, and a closed Store, are
// *tokens.UnavailableError.
func (s *Store) read(ctx context.Context, op, name string, withEpochs bool) (leaseState, error) {
	if s.conn.Closed() {
		return leaseState{}, unavailable(op, name, ErrClosed)
	}
	st, err := s.readState(ctx, name, withEpochs)
	if err != nil {
		return leaseState{}, unavailable(op, name, err)
	}
	return st, nil
}

// held reads the lease's state for a renew or release (op) by holder at
// epoch, and checks that the record names them and that by may act for its
// owner: a *tokens.LeaseLostError or *tokens.LeaseOwnedError otherwise.
func (s *Store) held(ctx context.Context, op, name, holder string, epoch int64, by tokens.Caller) (leaseState, error) {
	if err := tokens.ValidateHeld(name, holder, epoch, by); err != nil {
		return leaseState{}, err
	}
	st, err := s.read(ctx, op, name, false)
	if err != nil {
		return leaseState{}, err
	}
	if lost := s.lost(ctx, name, holder, epoch, st); lost != nil {
		return leaseState{}, lost
	}
	if !by.MayUse(st.rec.Owner) {
		return leaseState{}, &tokens.LeaseOwnedError{Name: name, Owner: st.rec.Owner, Caller: by.Name, Op: op}
	}
	return st, nil
}

// lost returns the *tokens.LeaseLostError of a renew or release by holder
// at epoch when the record does not name them, or nil.
func (s *Store) lost(ctx context.Context, name, holder string, epoch int64, st leaseState) error {
	named := tokens.Lease{Holder: st.rec.Holder, Epoch: st.rec.Epoch, Held: st.live()}
	if reason := tokens.LostReason(st.found, named, holder, epoch); reason != "" {
		return s.lostError(ctx, name, holder, epoch, st, reason)
	}
	return nil
}

// lostError is the *tokens.LeaseLostError of holder at epoch, for reason.
func (s *Store) lostError(ctx context.Context, name, holder string, epoch int64, st leaseState, reason string) error {
	e := &tokens.LeaseLostError{Name: name, Holder: holder, Epoch: epoch, Reason: reason}
	if st.found {
		e.Current = s.view(ctx, name, st)
	}
	return e
}

// view turns a read state with a record into a tokens.Lease.
func (s *Store) view(ctx context.Context, name string, st leaseState) tokens.Lease {
	l := tokens.Lease{
		Name:      name,
		Holder:    st.rec.Holder,
		Epoch:     st.rec.Epoch,
		TTL:       st.rec.ttl(),
		LockDelay: st.rec.lockDelay(),
		Held:      st.live(),
		Released:  st.rec.Released,
		Version:   max(st.recRev, st.renewedRev),
		Owner:     st.rec.Owner,
	}
	if st.live() {
		l.ExpiresAt = s.expiresAt(ctx, st)
	} else {
		l.ExpiresAt = s.clock.Now().UTC()
	}
	return l
}

// expiresAt estimates when the live lease in st lapses: now plus its etcd
// lease's remaining TTL, now if etcd no longer knows it, or now plus its
// TTL when etcd cannot be asked. It is only ever an estimate; whether the
// lease is held is decided by the alive key.
func (s *Store) expiresAt(ctx context.Context, st leaseState) time.Time {
	now := s.clock.Now().UTC()
	resp, err := s.cli.TimeToLive(ctx, st.aliveID)
	switch {
	case isLeaseNotFound(err):
		return now
	case err != nil:
		return now.Add(st.rec.ttl())
	case resp.TTL <= 0:
		return now
	}
	return now.Add(time.Duration(resp.TTL) * time.Second)
}

// delayLeft is how long the lock-delay in st still runs: the remaining TTL
// of its delay lease rounded up to whole seconds, or the whole delay when
// etcd cannot be asked.
func (s *Store) delayLeft(ctx context.Context, st leaseState) time.Duration {
	resp, err := s.cli.TimeToLive(ctx, st.delayID)
	switch {
	case isLeaseNotFound(err):
		return time.Second // lapsing now; etcd deletes the key shortly
	case err != nil:
		return st.rec.lockDelay()
	}
	return time.Duration(max(resp.TTL, 0)+1) * time.Second
}

// revokeQuietly revokes an etcd lease that no longer carries a key worth
// keeping, ignoring failures: an unrevoked lease lapses after its TTL. It
// waits at most cleanupTimeout, even past the end of ctx.
func (s *Store) revokeQuietly(ctx context.Context, id clientv3.LeaseID) {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, _ = s.cli.Revoke(c, id)
}

// ttlSeconds is ttl in whole seconds, rounded up: etcd lease TTLs are whole
// seconds, and a lease must not lapse before its TTL.
func ttlSeconds(ttl time.Duration) int64 {
	return int64((ttl + time.Second - 1) / time.Second)
}

func isLeaseNotFound(err error) bool {
	return err != nil && errors.Is(err, rpctypes.ErrLeaseNotFound)
}
