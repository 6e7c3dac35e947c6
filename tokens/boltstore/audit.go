package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fencegw/fencegw/tokens"
)

// auditBucket returns the bucket of an audit stream: its entries as JSON
// under their IDs, which bbolt keeps in order.
func auditBucket(stream tokens.AuditStream) []byte { return []byte("audit-" + string(stream)) }

// PutAudit stores entries in transactions of up to tokens.AuditBatch
// entries, so that a lease or HWM write waits for one small transaction at
// most; see tokens.AuditStore.
func (s *Store) PutAudit(ctx context.Context, entries []tokens.AuditEntry) error {
	for len(entries) > 0 {
		if err := ctx.Err(); err != nil {
			return &tokens.UnavailableError{Op: "audit", Err: err}
		}
		n := min(len(entries), tokens.AuditBatch)
		if err := s.db.Update(func(tx *bolt.Tx) error { return putAudit(tx, entries[:n]) }); err != nil {
			return &tokens.UnavailableError{Op: "audit", Err: err}
		}
		entries = entries[n:]
	}
	return nil
}

// putAudit stores entries in tx and keeps their streams' counts.
func putAudit(tx *bolt.Tx, entries []tokens.AuditEntry) error {
	counts := map[tokens.AuditStream]int{}
	for _, e := range entries {
		if !e.Stream.Valid() || !tokens.ValidAuditID(e.ID) {
			return fmt.Errorf("audit entry %q of stream %q: invalid", e.ID, e.Stream)
		}
		if _, ok := counts[e.Stream]; !ok {
			n, err := auditCount(tx, e.Stream)
			if err != nil {
				return err
			}
			counts[e.Stream] = n
		}
		b, err := tx.CreateBucketIfNotExists(auditBucket(e.Stream))
		if err != nil {
			return err
		}
		v, err := json.Marshal(e)
		if err != nil {
			return err
		}
		if b.Get([]byte(e.ID)) == nil {
			counts[e.Stream]++
		}
		if err := b.Put([]byte(e.ID), v); err != nil {
			return err
		}
		if err := putAuditIndex(tx, e); err != nil {
			return err
		}
	}
	for stream, n := range counts {
		if err := setAuditCount(tx, stream, n); err != nil {
			return err
		}
	}
	return nil
}

// auditCounts is the bucket of the number of entries of each stream, kept
// in the transactions that change them, so that a purge knows its excess
// without counting a large bucket while it holds the writer.
func auditCounts() []byte { return []byte("audit-counts") }

// auditCount returns the number of stream's entries: counted once, when
// no count is kept yet (a file written before counts were).
func auditCount(tx *bolt.Tx, stream tokens.AuditStream) (int, error) {
	if c := tx.Bucket(auditCounts()); c != nil {
		if v := c.Get([]byte(stream)); len(v) == 8 {
			return int(binary.BigEndian.Uint64(v)), nil
		}
	}
	if b := tx.Bucket(auditBucket(stream)); b != nil {
		return b.Stats().KeyN, nil
	}
	return 0, nil
}

// setAuditCount keeps n as the number of stream's entries.
func setAuditCount(tx *bolt.Tx, stream tokens.AuditStream, n int) error {
	c, err := tx.CreateBucketIfNotExists(auditCounts())
	if err != nil {
		return err
	}
	return c.Put([]byte(stream), binary.BigEndian.AppendUint64(nil, uint64(max(n, 0))))
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

// PurgeAudit deletes up to limit old entries and those beyond keep in one
// write transaction; see tokens.AuditStore.
func (s *Store) PurgeAudit(ctx context.Context, stream tokens.AuditStream, before time.Time, keep, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, &tokens.UnavailableError{Op: "audit purge", Err: err}
	}
	limit = max(limit, 1)
	n := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(auditBucket(stream))
		if b == nil {
			return nil
		}
		total, err := auditCount(tx, stream)
		if err != nil {
			return err
		}
		excess := total - keep
		bound := []byte(tokens.AuditIDBefore(before))
		c := b.Cursor()
		for k, v := c.First(); k != nil && n < limit && (excess > n || bytes.Compare(k, bound) < 0); k, v = c.First() {
			if err := deleteAuditIndex(tx, stream, v); err != nil {
				return err
			}
			if err := c.Delete(); err != nil {
				return err
			}
			n++
		}
		return setAuditCount(tx, stream, total-n)
	})
	if err != nil {
		return 0, &tokens.UnavailableError{Op: "audit purge", Err: err}
	}
	return n, nil
}
