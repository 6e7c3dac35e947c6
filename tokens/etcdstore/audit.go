package etcdstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// auditSub holds the durable audit: P + auditSub + stream + "/" + ID, the
// entry as JSON. IDs sort by interval, so key order is time order.
const auditSub = "\x00audit/"

// auditScanBatch is how many keys one range read of ListAudit fetches.
const auditScanBatch = 256

func (s *Store) auditBase(stream tokens.AuditStream) string {
	return s.prefix + auditSub + string(stream) + "/"
}

// PutAudit writes entries with their index keys in transactions of up to
// auditTxnEntries entries; see tokens.AuditStore.
func (s *Store) PutAudit(ctx context.Context, entries []tokens.AuditEntry) error {
	if s.conn.Closed() {
		return unavailable("audit", "", ErrClosed)
	}
	// The first write to a new store says that its audit is indexed; a
	// store of an older layout starts its backfill.
	if _, err := s.auditIndexReady(ctx); err != nil {
		return unavailable("audit", "", err)
	}
	for len(entries) > 0 {
		n := min(len(entries), auditTxnEntries)
		ops := make([]clientv3.Op, 0, n*auditOpsPerEntry+len(tokens.AuditStreams()))
		for _, e := range entries[:n] {
			put, err := s.auditPutOps(e)
			if err != nil {
				return err
			}
			ops = append(ops, put...)
		}
		if err := s.raiseAuditSpans(ctx, entries[:n]); err != nil {
			return unavailable("audit", "", err)
		}
		ops = append(ops, s.raiseAuditNewestOps(entries[:n])...)
		if _, err := s.cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			return unavailable("audit", "", err)
		}
		entries = entries[n:]
	}
	return nil
}

// ListAudit reads the index of q's resource or kind when q names one,
// else the time index (auditindex.go), from the highest ID q's times and
// cursor allow down, a batch at a time, until q.Limit entries matched;
// see tokens.AuditStore. Until the index is complete (auditIndexReady)
// it reads the stream itself, all of [lo, hi).
func (s *Store) ListAudit(ctx context.Context, q tokens.AuditQuery) ([]tokens.AuditEntry, error) {
	if s.conn.Closed() {
		return nil, unavailable("audit", "", ErrClosed)
	}
	ready, err := s.auditIndexReady(ctx)
	span := tokens.MaxAuditInterval
	if err == nil && ready && !q.Since.IsZero() {
		span, err = s.auditSpan(ctx, q.Stream)
	}
	if err != nil {
		return nil, unavailable("audit", "", err)
	}
	lo, hi := tokens.AuditIDRange(q, span)
	var out []tokens.AuditEntry
	if ready {
		prefix, indexed := tokens.AuditIndexFor(q)
		if !indexed {
			prefix = auditTimeIndex
		}
		out, err = s.listAuditIndexed(ctx, q, s.auditIndexBase(q.Stream)+prefix, lo, hi)
	} else {
		out, err = s.listAuditUnindexed(ctx, q, lo, hi)
	}
	if err != nil {
		return nil, unavailable("audit", "", err)
	}
	return out, nil
}

// listAuditUnindexed reads all the stream's entries with IDs in [lo, hi),
// in ascending range reads of auditScanBatch, and returns the highest
// q.Limit that q selects, highest first: the way while the index is
// incomplete, which costs the whole range.
func (s *Store) listAuditUnindexed(ctx context.Context, q tokens.AuditQuery, lo, hi string) ([]tokens.AuditEntry, error) {
	base := s.auditBase(q.Stream)
	from, end := base+lo, clientv3.GetPrefixRangeEnd(base)
	if hi != "" {
		end = base + hi
	}
	var kept []tokens.AuditEntry
	err := s.scanAudit(ctx, from, end, func(e tokens.AuditEntry) {
		if !q.Matches(e) {
			return
		}
		kept = append(kept, e)
		if len(kept) > 2*q.Limit {
			kept = append(kept[:0], kept[len(kept)-q.Limit:]...)
		}
	})
	if err != nil {
		return nil, err
	}
	kept = kept[max(len(kept)-q.Limit, 0):]
	slices.Reverse(kept)
	return kept, nil
}

// scanAudit reads the entries stored from key from up to key end, in
// batches of auditScanBatch, and hands each to each in key order.
func (s *Store) scanAudit(ctx context.Context, from, end string, each func(tokens.AuditEntry)) error {
	for {
		resp, err := s.cli.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(auditScanBatch))
		if err != nil {
			return err
		}
		for _, kv := range resp.Kvs {
			e, err := decodeAudit(kv.Key, kv.Value)
			if err != nil {
				return err
			}
			each(e)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// decodeAudit reads the entry stored under key.
func decodeAudit(key, value []byte) (tokens.AuditEntry, error) {
	var e tokens.AuditEntry
	if err := json.Unmarshal(value, &e); err != nil {
		return e, fmt.Errorf("corrupt audit entry %q: %w", key, err)
	}
	return e, nil
}

// PurgeAudit deletes up to limit of the oldest entries that are of old
// intervals or beyond keep, bounded by a keys-only read of at most limit
// keys, each with its index keys, auditTxnEntries per transaction
// (deleteAuditRange); see tokens.AuditStore.
func (s *Store) PurgeAudit(ctx context.Context, stream tokens.AuditStream, before time.Time, keep, limit int) (int, error) {
	if s.conn.Closed() {
		return 0, unavailable("audit purge", "", ErrClosed)
	}
	limit = max(limit, 1)
	base := s.auditBase(stream)
	count, err := s.cli.Get(ctx, base, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, unavailable("audit purge", "", err)
	}
	oldest, err := s.cli.Get(ctx, base, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(int64(limit)),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return 0, unavailable("audit purge", "", err)
	}
	excess := int(count.Count) - keep
	bound := base + tokens.AuditIDBefore(before)
	n := 0
	for _, kv := range oldest.Kvs {
		if n >= excess && string(kv.Key) >= bound {
			break
		}
		n++
	}
	if n == 0 {
		return 0, nil
	}
	upTo := string(oldest.Kvs[n-1].Key) + "\x00"
	gone, err := s.deleteAuditRange(ctx, stream, base, upTo)
	if err != nil {
		return gone, unavailable("audit purge", "", err)
	}
	return gone, nil
}
