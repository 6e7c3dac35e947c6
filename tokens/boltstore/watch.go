package boltstore

import (
	"context"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/fencegw/fencegw/tokens"
)

// keptChanges is how many changes of each lease the Store keeps in memory
// for watchers that resume.
const keptChanges = 256

// changeLog is the recent changes of one lease, oldest first; every change
// with a Seq above floor is in it.
type changeLog struct {
	floor   int64
	changes []tokens.LeaseChange
}

// stagedChange is a change written in a transaction not yet committed.
type stagedChange struct {
	name    string
	rec     leaseRecord
	prevSeq int64 // the Seq of the record it replaced (0: none)
}

// putLease writes rec with the next sequence of the lease bucket, which
// numbers every change of every lease, and stages the change for
// commitChange. The caller holds leaseMu.
func (s *Store) putLease(tx *bolt.Tx, name string, rec leaseRecord) error {
	seq, err := tx.Bucket(leaseBucket).NextSequence()
	if err != nil {
		return fmt.Errorf("numbering the change of lease %q: %w", name, err)
	}
	prev, _, err := getLease(tx, name)
	if err != nil {
		return err
	}
	rec.Seq = int64(seq)
	if err := putLease(tx, name, rec); err != nil {
		return err
	}
	s.staged = &stagedChange{name: name, rec: rec, prevSeq: prev.Seq}
	return nil
}

// commitChange logs the change staged by the transaction that just
// committed (none when it wrote no record) and tells watchers; failed
// forgets it. The caller holds leaseMu.
func (s *Store) commitChange(failed bool) {
	st := s.staged
	s.staged = nil
	if st == nil || failed {
		return
	}
	if s.changes == nil {
		s.changes = make(map[string]*changeLog)
	}
	l := s.changes[st.name]
	if l == nil {
		l = &changeLog{floor: st.prevSeq}
		s.changes[st.name] = l
	}
	l.changes = append(l.changes, tokens.LeaseChange{Seq: st.rec.Seq, Lease: s.leaseState(st.name, st.rec, s.now())})
	if len(l.changes) > keptChanges {
		l.floor = l.changes[0].Seq
		l.changes = slices.Delete(l.changes, 0, 1)
	}
	s.notes.Notify(st.name)
}

// WatchLease streams the changes of lease name made through this Store,
// its only writer; see tokens.LeaseWatcher. Every change is numbered by
// the lease bucket's sequence, kept on disk, so numbers keep rising across
// restarts; the last keptChanges changes of each lease since Open are kept
// in memory, and a watch resuming from before them, or from beyond the
// latest, starts with the latest, Gap set.
func (s *Store) WatchLease(ctx context.Context, name string, after int64) (<-chan tokens.LeaseChange, error) {
	if err := tokens.ValidateResource(name); err != nil {
		return nil, err
	}
	notes := s.notes.Subscribe(ctx, name)
	return tokens.FollowChanges(ctx, notes, after, func(ctx context.Context, after int64, latest bool) ([]tokens.LeaseChange, error) {
		return s.readChanges(name, after, latest)
	}), nil
}

// readChanges returns the changes of name after after, or only the
// latest; see WatchLease.
func (s *Store) readChanges(name string, after int64, latest bool) ([]tokens.LeaseChange, error) {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	l := s.changes[name]
	if l == nil || len(l.changes) == 0 {
		// Nothing changed since Open: the record is the latest change.
		rec, found, err := s.viewLease(name)
		if err != nil {
			return nil, &tokens.UnavailableError{Op: "watch", Resource: name, Err: err}
		}
		if !found || rec.Seq == after {
			return nil, nil
		}
		return []tokens.LeaseChange{{Seq: rec.Seq, Lease: s.leaseState(name, rec, s.now()), Gap: !latest}}, nil
	}
	last := l.changes[len(l.changes)-1]
	switch {
	case latest:
		return []tokens.LeaseChange{last}, nil
	case after < l.floor || after > last.Seq: // trimmed, or beyond the latest
		last.Gap = true
		return []tokens.LeaseChange{last}, nil
	}
	i, _ := slices.BinarySearchFunc(l.changes, after+1, func(c tokens.LeaseChange, seq int64) int {
		return int(min(max(c.Seq-seq, -1), 1))
	})
	return slices.Clone(l.changes[i:]), nil
}
