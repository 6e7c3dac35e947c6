package etcdstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// auditSub holds the durable audit: P + auditSub + stream + "/" + ID, the
// entry as JSON. IDs sort by interval, so key order is time order.
const auditSub = "\x00audit/"

// auditPutBatch bounds the puts of one transaction, below etcd's default
// limit of 128 operations per transaction.
const auditPutBatch = 100

// auditScanBatch is how many keys one range read of ListAudit fetches.
const auditScanBatch = 256

func (s *Store) auditBase(stream tokens.AuditStream) string {
	return s.prefix + auditSub + string(stream) + "/"
}

// PutAudit writes entries in transactions of up to auditPutBatch puts; see
// tokens.AuditStore.
func (s *Store) PutAudit(ctx context.Context, entries []tokens.AuditEntry) error {
	if s.conn.Closed() {
		return unavailable("audit", "", ErrClosed)
	}
	for len(entries) > 0 {
		n := min(len(entries), auditPutBatch)
		ops := make([]clientv3.Op, 0, n)
		for _, e := range entries[:n] {
			if !e.Stream.Valid() || !tokens.ValidAuditID(e.ID) {
				return fmt.Errorf("audit entry %q of stream %q: invalid", e.ID, e.Stream)
			}
			v, err := json.Marshal(e)
			if err != nil {
				return err
			}
			ops = append(ops, clientv3.OpPut(s.auditBase(e.Stream)+e.ID, string(v)))
		}
		if _, err := s.cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			return unavailable("audit", "", err)
		}
		entries = entries[n:]
	}
	return nil
}

// ListAudit reads the stream's keys from the highest down, a batch at a
// time, until q.Limit entries matched; see tokens.AuditStore.
func (s *Store) ListAudit(ctx context.Context, q tokens.AuditQuery) ([]tokens.AuditEntry, error) {
	if s.conn.Closed() {
		return nil, unavailable("audit", "", ErrClosed)
	}
	base := s.auditBase(q.Stream)
	end := clientv3.GetPrefixRangeEnd(base)
	if q.Before != "" {
		end = base + q.Before
	}
	var out []tokens.AuditEntry
	for len(out) < q.Limit {
		resp, err := s.cli.Get(ctx, base, clientv3.WithRange(end), clientv3.WithLimit(auditScanBatch),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
		if err != nil {
			return nil, unavailable("audit", "", err)
		}
		for _, kv := range resp.Kvs {
			var e tokens.AuditEntry
			if err := json.Unmarshal(kv.Value, &e); err != nil {
				return nil, unavailable("audit", "", fmt.Errorf("corrupt audit entry %q: %w", kv.Key, err))
			}
			if q.Matches(e) {
				if out = append(out, e); len(out) == q.Limit {
					break
				}
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		end = string(resp.Kvs[len(resp.Kvs)-1].Key)
	}
	return out, nil
}

// PurgeAudit deletes up to limit of the oldest keys that are of old
// intervals or beyond keep, in one range delete bounded by a keys-only read
// of at most limit keys; see tokens.AuditStore.
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
	gone, err := s.cli.Delete(ctx, base, clientv3.WithRange(upTo))
	if err != nil {
		return 0, unavailable("audit purge", "", err)
	}
	return int(gone.Deleted), nil
}
