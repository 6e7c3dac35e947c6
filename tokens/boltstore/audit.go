package boltstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fencegw/fencegw/tokens"
)

// auditBucket returns the bucket of an audit stream: its entries as JSON
// under their IDs, which bbolt keeps in order.
func auditBucket(stream tokens.AuditStream) []byte { return []byte("audit-" + string(stream)) }

// PutAudit stores entries in one transaction; see tokens.AuditStore.
func (s *Store) PutAudit(ctx context.Context, entries []tokens.AuditEntry) error {
	if err := ctx.Err(); err != nil {
		return &tokens.UnavailableError{Op: "audit", Err: err}
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, e := range entries {
			if !e.Stream.Valid() || !tokens.ValidAuditID(e.ID) {
				return fmt.Errorf("audit entry %q of stream %q: invalid", e.ID, e.Stream)
			}
			b, err := tx.CreateBucketIfNotExists(auditBucket(e.Stream))
			if err != nil {
				return err
			}
			v, err := json.Marshal(e)
			if err != nil {
				return err
			}
			if err := b.Put([]byte(e.ID), v); err != nil {
				return err
			}
			if err := putAuditIndex(tx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return &tokens.UnavailableError{Op: "audit", Err: err}
	}
	return nil
}

// ListAudit reads the IDs q can select from the highest down — from the
// index of the resource or kind when q names one, within the IDs its
// times allow — until q.Limit entries matched; see tokens.AuditStore.
func (s *Store) ListAudit(ctx context.Context, q tokens.AuditQuery) ([]tokens.AuditEntry, error) {
	var out []tokens.AuditEntry
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(auditBucket(q.Stream))
		if b == nil {
			return nil
		}
		return scanAuditIDs(tx, q, func(id []byte) (bool, error) {
			v := b.Get(id)
			if v == nil {
				return true, nil // an index key without its entry: skip
			}
			var e tokens.AuditEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return false, fmt.Errorf("corrupt audit entry %q: %w", id, err)
			}
			if q.Matches(e) {
				out = append(out, e)
			}
			return len(out) < q.Limit, nil
		})
	})
	if err != nil {
		return nil, &tokens.UnavailableError{Op: "audit", Err: err}
	}
	return out, nil
}

// PurgeAudit deletes old entries and those beyond keep; see
// tokens.AuditStore.
func (s *Store) PurgeAudit(ctx context.Context, stream tokens.AuditStream, before time.Time, keep int) (int, error) {
	n := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(auditBucket(stream))
		if b == nil {
			return nil
		}
		excess := b.Stats().KeyN - keep
		bound := []byte(tokens.AuditIDBefore(before))
		c := b.Cursor()
		for k, v := c.First(); k != nil && (excess > n || bytes.Compare(k, bound) < 0); k, v = c.First() {
			if err := deleteAuditIndex(tx, stream, v); err != nil {
				return err
			}
			if err := c.Delete(); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return n, &tokens.UnavailableError{Op: "audit purge", Err: err}
	}
	return n, nil
}
