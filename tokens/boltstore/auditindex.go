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

// auditIndexBucket returns the bucket of a stream's secondary index: the
// keys of tokens.AuditIndexKeys, with no value, written and deleted in the
// transaction that writes or deletes their entry.
func auditIndexBucket(stream tokens.AuditStream) []byte {
	return []byte("audit-index-" + string(stream))
}

// auditSpanBucket holds each stream's longest entry span (tokens.AuditSpan)
// in milliseconds, big-endian, under the stream's name.
var auditSpanBucket = []byte("audit-span")

// auditSpan returns the longest span of stream's entries within tx:
// tokens.MaxAuditInterval when none was recorded.
func auditSpan(tx *bolt.Tx, stream tokens.AuditStream) time.Duration {
	if b := tx.Bucket(auditSpanBucket); b != nil {
		if v := b.Get([]byte(stream)); len(v) == 8 {
			return time.Duration(binary.BigEndian.Uint64(v)) * time.Millisecond
		}
	}
	return tokens.MaxAuditInterval
}

// putAuditIndex writes e's index keys within tx, and raises its stream's
// span to e's.
func putAuditIndex(tx *bolt.Tx, e tokens.AuditEntry) error {
	b, err := tx.CreateBucketIfNotExists(auditIndexBucket(e.Stream))
	if err != nil {
		return err
	}
	spans, err := tx.CreateBucketIfNotExists(auditSpanBucket)
	if err != nil {
		return err
	}
	span := tokens.AuditSpan(e)
	if v := spans.Get([]byte(e.Stream)); len(v) != 8 || time.Duration(binary.BigEndian.Uint64(v))*time.Millisecond < span {
		if err := spans.Put([]byte(e.Stream), binary.BigEndian.AppendUint64(nil, uint64(span.Milliseconds()))); err != nil {
			return err
		}
	}
	for _, k := range tokens.AuditIndexKeys(e) {
		if err := b.Put([]byte(k), nil); err != nil {
			return err
		}
	}
	return nil
}

// deleteAuditIndex deletes, within tx, the index keys of the stream's
// entry stored as v (its JSON). A purge calls it for every entry it
// deletes, in the same transaction.
func deleteAuditIndex(tx *bolt.Tx, stream tokens.AuditStream, v []byte) error {
	var e tokens.AuditEntry
	if err := json.Unmarshal(v, &e); err != nil {
		return fmt.Errorf("corrupt audit entry: %w", err)
	}
	b := tx.Bucket(auditIndexBucket(stream))
	if b == nil {
		return nil
	}
	for _, k := range tokens.AuditIndexKeys(e) {
		if err := b.Delete([]byte(k)); err != nil {
			return err
		}
	}
	return nil
}

// buildAuditIndexes indexes, once, the entries of a file written before
// the audit had an index: a stream whose entries exist without an index
// bucket. Open calls it; afterwards every write keeps the index.
func buildAuditIndexes(tx *bolt.Tx) error {
	for _, stream := range tokens.AuditStreams() {
		b := tx.Bucket(auditBucket(stream))
		if b == nil || tx.Bucket(auditIndexBucket(stream)) != nil {
			continue
		}
		if _, err := tx.CreateBucket(auditIndexBucket(stream)); err != nil {
			return err
		}
		err := b.ForEach(func(k, v []byte) error {
			var e tokens.AuditEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("corrupt audit entry %q: %w", k, err)
			}
			e.Stream = stream
			return putAuditIndex(tx, e)
		})
		if err != nil {
			return fmt.Errorf("index the audit's %s: %w", stream, err)
		}
	}
	return nil
}

// scanAuditIDs calls visit with the IDs q may select, highest first, until
// visit returns false: from the index when q names a resource or a kind,
// else from the stream's own bucket, within the IDs of q's times and
// cursor (tokens.AuditIDRange). An ID is only valid during visit.
func scanAuditIDs(tx *bolt.Tx, q tokens.AuditQuery, visit func(id []byte) (more bool, err error)) error {
	lo, hi := tokens.AuditIDRange(q, auditSpan(tx, q.Stream))
	prefix, indexed := tokens.AuditIndexFor(q)
	b := tx.Bucket(auditBucket(q.Stream))
	if indexed {
		b = tx.Bucket(auditIndexBucket(q.Stream))
	}
	if b == nil {
		return nil
	}
	p := []byte(prefix)
	c := b.Cursor()
	var k []byte
	switch {
	case hi != "":
		k = seekBelow(c, []byte(prefix+hi))
	case indexed:
		// The prefix ends in a NUL byte: the next prefix ends in 1.
		k = seekBelow(c, append(bytes.Clone(p[:len(p)-1]), 1))
	default:
		k, _ = c.Last()
	}
	for ; k != nil && bytes.HasPrefix(k, p); k, _ = c.Prev() {
		id := k[len(p):]
		if lo != "" && string(id) < lo {
			return nil
		}
		if more, err := visit(id); err != nil || !more {
			return err
		}
	}
	return nil
}

// seekBelow moves c to the last key below bound and returns it.
func seekBelow(c *bolt.Cursor, bound []byte) []byte {
	if k, _ := c.Seek(bound); k == nil {
		k, _ = c.Last()
		return k
	}
	k, _ := c.Prev()
	return k
}

// CountAuditIndex returns how many index keys stream holds (see
// storetest.AuditIndexCounter).
func (s *Store) CountAuditIndex(ctx context.Context, stream tokens.AuditStream) (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(auditIndexBucket(stream)); b != nil {
			n = b.Stats().KeyN
		}
		return nil
	})
	return n, err
}

// ListAuditResources seeks the resource indexes once per name; see
// tokens.AuditResourceLister.
func (s *Store) ListAuditResources(ctx context.Context, q tokens.AuditResourceQuery) ([]string, error) {
	var out []string
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		out, err = tokens.ListAuditResourcesBy(q, func(stream tokens.AuditStream, seek string) (string, error) {
			b := tx.Bucket(auditIndexBucket(stream))
			if b == nil {
				return "", nil
			}
			k, _ := b.Cursor().Seek([]byte(seek))
			return string(k), nil
		})
		return err
	})
	if err != nil {
		return nil, &tokens.UnavailableError{Op: "audit", Err: err}
	}
	return out, nil
}
