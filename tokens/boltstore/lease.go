package boltstore

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fencegw/fencegw/tokens"
)

// leaseRecord is a lease as kept on disk. Deadlines are decided by the
// process's monotonic clock; the wall-clock expiry on disk only carries a
// lease across a restart, where it is capped at one TTL.
type leaseRecord struct {
	Holder      string `json:"holder"`
	Epoch       int64  `json:"epoch"`
	TTLMillis   int64  `json:"ttl_ms"`
	ExpiresUnix int64  `json:"expires_unix_nano"`
	// Owner is the Name of the caller that acquired the grant; absent for
	// an unowned grant (and in records written before owners existed).
	Owner string `json:"owner,omitempty"`
	// LockDelayMillis is the grant's lock-delay (absent: none).
	LockDelayMillis int64 `json:"lock_delay_ms,omitempty"`
	// Released reports that the grant was released while live: it ended
	// cleanly, and the next grant skips its lock-delay.
	Released bool `json:"released,omitempty"`
	// Version counts the writes of the record: grants, renewals, releases.
	Version int64 `json:"version,omitempty"`
	// Seq numbers the change that wrote the record among every change of
	// every lease (the lease bucket's sequence); see WatchLease.
	Seq int64 `json:"seq,omitempty"`
}

func (r leaseRecord) ttl() time.Duration { return time.Duration(r.TTLMillis) * time.Millisecond }

func (r leaseRecord) lockDelay() time.Duration {
	return time.Duration(r.LockDelayMillis) * time.Millisecond
}

// Acquire grants name to holder, owned by by.Name; see tokens.LeaseStore.
// The ownership check, the epoch check and the grant happen in one bbolt
// transaction under the lease lock. Refusals are *tokens.LeaseHeldError,
// *tokens.LeaseOwnedError, *tokens.LockDelayError and
// *tokens.EpochExhaustedError; any other failure is a
// *tokens.UnavailableError. The lock-delay runs on the process's monotonic
// clock from the grant's deadline.
func (s *Store) Acquire(ctx context.Context, name, holder string, t tokens.Terms, by tokens.Caller) (tokens.Grant, error) {
	if err := begin(ctx, "acquire", name, tokens.ValidateAcquire(name, holder, t, by)); err != nil {
		return tokens.Grant{}, err
	}
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	now := s.now()
	var g tokens.Grant
	err := s.db.Update(func(tx *bolt.Tx) error {
		rec, found, err := getLease(tx, name)
		if err != nil {
			return err
		}
		if found {
			prev := s.leaseState(name, rec, now)
			g.Previous = &prev
			if prev.Held && rec.Holder != holder {
				return &tokens.LeaseHeldError{Name: name, Holder: rec.Holder, Epoch: rec.Epoch, ExpiresAt: prev.ExpiresAt}
			}
			if prev.Held && !by.MayUse(rec.Owner) {
				return &tokens.LeaseOwnedError{Name: name, Owner: rec.Owner, Caller: by.Name, Op: "acquire"}
			}
			if left := s.delayLeft(name, rec, now); left > 0 {
				return &tokens.LockDelayError{Name: name, Holder: rec.Holder, Epoch: rec.Epoch, Left: left}
			}
		}
		hwm, err := get(tx, name)
		if err != nil {
			return err
		}
		base := max(rec.Epoch, hwm)
		if base == math.MaxInt64 {
			return &tokens.EpochExhaustedError{Name: name, Epoch: base}
		}
		epoch := base + 1
		ttl := time.Duration(t.TTL.Milliseconds()) * time.Millisecond
		rec = leaseRecord{Holder: holder, Epoch: epoch, TTLMillis: ttl.Milliseconds(), ExpiresUnix: s.wall().Add(ttl).UnixNano(),
			Owner: by.Name, LockDelayMillis: t.LockDelay.Milliseconds(), Version: rec.Version + 1}
		if err := s.putLease(tx, name, rec); err != nil {
			return err
		}
		if err := put(tx, bucket, name, epoch); err != nil {
			return err
		}
		if err := put(tx, issuedBucket, name, epoch); err != nil {
			return err
		}
		s.deadlines[name] = now.Add(ttl)
		g.Lease = s.leaseState(name, rec, now)
		return nil
	})
	s.commitChange(err != nil)
	if err != nil {
		if tokens.IsVerdict(err) {
			return tokens.Grant{}, err
		}
		delete(s.deadlines, name) // the commit failed: forget what it set
		return tokens.Grant{}, &tokens.UnavailableError{Op: "acquire", Resource: name, Err: err}
	}
	return g, nil
}

// Renew extends holder's live lease; see tokens.LeaseStore.
func (s *Store) Renew(ctx context.Context, name, holder string, epoch int64, by tokens.Caller) (tokens.Lease, error) {
	var out tokens.Lease
	err := s.updateHeld(ctx, "renew", name, holder, epoch, by, func(tx *bolt.Tx, rec leaseRecord, cur tokens.Lease, now time.Time) error {
		if !cur.Held {
			return &tokens.LeaseLostError{Name: name, Holder: holder, Epoch: epoch, Current: cur, Reason: "expired"}
		}
		rec.ExpiresUnix = s.wall().Add(rec.ttl()).UnixNano()
		rec.Version++
		if err := s.putLease(tx, name, rec); err != nil {
			return err
		}
		s.deadlines[name] = now.Add(rec.ttl())
		out = s.leaseState(name, rec, now)
		return nil
	})
	return out, err
}

// Release ends holder's lease now; see tokens.LeaseStore.
func (s *Store) Release(ctx context.Context, name, holder string, epoch int64, by tokens.Caller) error {
	return s.updateHeld(ctx, "release", name, holder, epoch, by, func(tx *bolt.Tx, rec leaseRecord, cur tokens.Lease, now time.Time) error {
		if !cur.Held {
			return nil // already lapsed or released: a retry succeeds
		}
		rec.ExpiresUnix = s.wall().UnixNano()
		rec.Released = true
		rec.Version++
		if err := s.putLease(tx, name, rec); err != nil {
			return err
		}
		s.deadlines[name] = now
		return nil
	})
}

// updateHeld runs change in one transaction under the lease lock once the
// lease is found to be holder's grant at epoch, usable by by; otherwise it
// returns the *tokens.LeaseLostError or *tokens.LeaseOwnedError. change
// sees the record and its state as of now. Failures other than lease
// verdicts are *tokens.UnavailableError, and forget the deadline change
// may have set.
func (s *Store) updateHeld(ctx context.Context, op, name, holder string, epoch int64, by tokens.Caller,
	change func(tx *bolt.Tx, rec leaseRecord, cur tokens.Lease, now time.Time) error) error {
	if err := begin(ctx, op, name, tokens.ValidateHeld(name, holder, epoch, by)); err != nil {
		return err
	}
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	now := s.now()
	err := s.db.Update(func(tx *bolt.Tx) error {
		rec, found, err := getLease(tx, name)
		if err != nil {
			return err
		}
		cur := s.leaseState(name, rec, now)
		if lost := tokens.LostReason(found, cur, holder, epoch); lost != "" {
			return &tokens.LeaseLostError{Name: name, Holder: holder, Epoch: epoch, Current: cur, Reason: lost}
		}
		if !by.MayUse(rec.Owner) {
			return &tokens.LeaseOwnedError{Name: name, Owner: rec.Owner, Caller: by.Name, Op: op}
		}
		return change(tx, rec, cur, now)
	})
	s.commitChange(err != nil)
	if tokens.IsVerdict(err) {
		return err
	}
	if err != nil {
		delete(s.deadlines, name)
		return &tokens.UnavailableError{Op: op, Resource: name, Err: err}
	}
	return nil
}

// SubscribeLease notifies of every grant, renewal and release made through
// this Store, its only writer; see tokens.LeaseNotifier. Lapses are not
// notified: a watcher learns them from the expiry it read.
func (s *Store) SubscribeLease(ctx context.Context, name string) (<-chan struct{}, error) {
	if err := tokens.ValidateResource(name); err != nil {
		return nil, err
	}
	return s.notes.Subscribe(ctx, name), nil
}

// Lease returns the lease's state; see tokens.LeaseStore.
func (s *Store) Lease(ctx context.Context, name string) (tokens.Lease, error) {
	if err := begin(ctx, "lease", name, tokens.ValidateResource(name)); err != nil {
		return tokens.Lease{}, err
	}
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	rec, found, err := s.viewLease(name)
	if err != nil {
		return tokens.Lease{}, &tokens.UnavailableError{Op: "lease", Resource: name, Err: err}
	}
	if !found {
		return tokens.Lease{}, fmt.Errorf("lease %q: %w", name, tokens.ErrLeaseNotFound)
	}
	return s.leaseState(name, rec, s.now()), nil
}

// leaseState turns a record into a Lease as of now. The deadline is the
// monotonic one set by this process; a lease not touched since Open gets
// its on-disk expiry, capped at one TTL from now, and one that had lapsed
// by then no earlier than its lock-delay before now (so a restart cannot
// shorten a lock-delay, whatever the wall clock did). The caller holds
// leaseMu.
func (s *Store) leaseState(name string, rec leaseRecord, now time.Time) tokens.Lease {
	deadline := s.deadline(name, rec, now)
	return tokens.Lease{
		Name:      name,
		Holder:    rec.Holder,
		Epoch:     rec.Epoch,
		TTL:       rec.ttl(),
		LockDelay: rec.lockDelay(),
		ExpiresAt: s.wall().Add(deadline.Sub(now)).UTC(),
		Held:      deadline.After(now),
		Released:  rec.Released,
		Version:   rec.Version,
		Owner:     rec.Owner,
	}
}

// deadline is the monotonic deadline of rec's grant; see leaseState. The
// caller holds leaseMu.
func (s *Store) deadline(name string, rec leaseRecord, now time.Time) time.Time {
	deadline, ok := s.deadlines[name]
	if !ok {
		left := time.Duration(rec.ExpiresUnix - s.wall().UnixNano())
		left = min(max(left, -rec.lockDelay()), rec.ttl())
		deadline = now.Add(left)
		s.deadlines[name] = deadline
	}
	return deadline
}

// delayLeft is how long rec's lock-delay still runs at now: 0 unless its
// grant lapsed without a release less than its lock-delay ago. The caller
// holds leaseMu.
func (s *Store) delayLeft(name string, rec leaseRecord, now time.Time) time.Duration {
	if rec.Released || rec.LockDelayMillis <= 0 {
		return 0
	}
	deadline := s.deadline(name, rec, now)
	if deadline.After(now) {
		return 0 // live: not lapsed
	}
	return max(deadline.Add(rec.lockDelay()).Sub(now), 0)
}

// Mark returns resource's HWM and its lease's life in one read; see
// tokens.Store.
func (s *Store) Mark(ctx context.Context, resource string) (tokens.Mark, error) {
	if err := begin(ctx, "mark", resource, tokens.ValidateResource(resource)); err != nil {
		return tokens.Mark{}, err
	}
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	var (
		m     tokens.Mark
		rec   leaseRecord
		found bool
	)
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		if m.HWM, err = get(tx, resource); err != nil {
			return err
		}
		if rec, found, err = getLease(tx, resource); err != nil || found {
			return err
		}
		// A reclaimed lease: still leased, at its issued epoch, not live.
		m.Lease.Epoch, err = getFrom(tx, issuedBucket, resource)
		return err
	})
	if err != nil {
		return tokens.Mark{}, &tokens.UnavailableError{Op: "mark", Resource: resource, Err: err}
	}
	if found {
		now := s.now()
		m.Lease = tokens.LeaseLife{Epoch: rec.Epoch, Left: max(s.deadline(resource, rec, now).Sub(now), 0), Released: rec.Released}
	}
	return m, nil
}

// viewLease reads name's lease record in a read transaction of its own.
func (s *Store) viewLease(name string) (rec leaseRecord, found bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		rec, found, err = getLease(tx, name)
		return err
	})
	return rec, found, err
}

func getLease(tx *bolt.Tx, name string) (leaseRecord, bool, error) {
	v := tx.Bucket(leaseBucket).Get([]byte(name))
	if v == nil {
		return leaseRecord{}, false, nil
	}
	var rec leaseRecord
	if err := json.Unmarshal(v, &rec); err != nil || rec.Epoch <= 0 || rec.TTLMillis <= 0 {
		return leaseRecord{}, false, fmt.Errorf("corrupt lease record for %q", name)
	}
	return rec, true, nil
}

func putLease(tx *bolt.Tx, name string, rec leaseRecord) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return tx.Bucket(leaseBucket).Put([]byte(name), v)
}
