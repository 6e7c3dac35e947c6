package etcdstore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// The audit's secondary index: P + auditIndexSub + stream + "/" + each key
// of tokens.AuditIndexKeys, with an empty value, put in the transaction
// that puts the entry and deleted in the one that deletes it. A query by
// resource or kind reads its index prefix, then only the entries named.
const (
	auditIndexSub = "\x00auditidx/"
	// auditIndexVersion, once present, says every entry is indexed: the
	// one-time backfill of entries written before the index has run.
	auditIndexVersion = "\x00auditidx-version"
	// auditBackfillCursor + stream holds the last ID the backfill indexed.
	auditBackfillCursor = "\x00auditidx-backfill/"
)

// auditOpsPerEntry is how many operations putting or deleting one entry
// takes: the entry and its index keys.
const auditOpsPerEntry = 3

// auditTxnEntries bounds the entries of one transaction, within etcd's
// default limit of 128 operations.
const auditTxnEntries = 128/auditOpsPerEntry - 1

// auditIndexState is whether the index is known complete, and the
// backfill running in the background, if any.
type auditIndexState struct {
	ready  atomic.Bool
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}                        // closed when the backfill ends; nil when none ran or it failed
	run    chan struct{}                        // held by the backfill running (runner)
	spans  map[tokens.AuditStream]time.Duration // the spans this Store raised (auditspan.go)
}

func (s *Store) auditIndexBase(stream tokens.AuditStream) string {
	return s.prefix + auditIndexSub + string(stream) + "/"
}

// auditPutOps returns the operations that write e: the entry and its
// index keys.
func (s *Store) auditPutOps(e tokens.AuditEntry) ([]clientv3.Op, error) {
	if !e.Stream.Valid() || !tokens.ValidAuditID(e.ID) {
		return nil, fmt.Errorf("audit entry %q of stream %q: invalid", e.ID, e.Stream)
	}
	v, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	ops := []clientv3.Op{clientv3.OpPut(s.auditBase(e.Stream)+e.ID, string(v))}
	for _, k := range tokens.AuditIndexKeys(e) {
		ops = append(ops, clientv3.OpPut(s.auditIndexBase(e.Stream)+k, ""))
	}
	return ops, nil
}

// auditDeleteOps returns the operations that delete the stream's entry
// kv (read with its value): the entry and its index keys. A purge puts
// them in one transaction so that no index key outlives its entry.
func (s *Store) auditDeleteOps(stream tokens.AuditStream, key string, value []byte) ([]clientv3.Op, error) {
	var e tokens.AuditEntry
	if err := json.Unmarshal(value, &e); err != nil {
		return nil, fmt.Errorf("corrupt audit entry %q: %w", key, err)
	}
	ops := []clientv3.Op{clientv3.OpDelete(key)}
	for _, k := range tokens.AuditIndexKeys(e) {
		ops = append(ops, clientv3.OpDelete(s.auditIndexBase(stream)+k))
	}
	return ops, nil
}

// deleteAuditRange deletes the stream's entries with keys in [from, to),
// with their index keys, auditTxnEntries per transaction, and returns how
// many it deleted.
func (s *Store) deleteAuditRange(ctx context.Context, stream tokens.AuditStream, from, to string) (int, error) {
	n := 0
	for {
		resp, err := s.cli.Get(ctx, from, clientv3.WithRange(to), clientv3.WithLimit(auditTxnEntries),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
		if err != nil || len(resp.Kvs) == 0 {
			return n, err
		}
		var ops []clientv3.Op
		for _, kv := range resp.Kvs {
			del, err := s.auditDeleteOps(stream, string(kv.Key), kv.Value)
			if err != nil {
				return n, err
			}
			ops = append(ops, del...)
		}
		if _, err := s.cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			return n, err
		}
		n += len(resp.Kvs)
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// CountAuditIndex returns how many index keys stream holds (see
// storetest.AuditIndexCounter).
func (s *Store) CountAuditIndex(ctx context.Context, stream tokens.AuditStream) (int, error) {
	resp, err := s.cli.Get(ctx, s.auditIndexBase(stream), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, unavailable("audit", "", err)
	}
	return int(resp.Count), nil
}

// listAuditIndexed reads the index keys under ibase with IDs in [lo, hi)
// from the highest down, a batch at a time, then the entries they name,
// until q.Limit entries matched. An index key whose entry is gone (a purge
// under way) is skipped.
func (s *Store) listAuditIndexed(ctx context.Context, q tokens.AuditQuery, ibase, lo, hi string) ([]tokens.AuditEntry, error) {
	end := clientv3.GetPrefixRangeEnd(ibase)
	if hi != "" {
		end = ibase + hi
	}
	var out []tokens.AuditEntry
	for len(out) < q.Limit {
		resp, err := s.cli.Get(ctx, ibase+lo, clientv3.WithRange(end), clientv3.WithLimit(auditScanBatch),
			clientv3.WithKeysOnly(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
		if err != nil {
			return nil, err
		}
		if out, err = s.appendAuditEntries(ctx, q, out, resp.Kvs, len(ibase)); err != nil {
			return nil, err
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		end = string(resp.Kvs[len(resp.Kvs)-1].Key)
	}
	return out, nil
}

// appendAuditEntries reads, in transactions of up to 128 gets, the
// entries whose IDs are the index keys' suffixes from at, and appends
// those q selects to out, up to q.Limit.
func (s *Store) appendAuditEntries(ctx context.Context, q tokens.AuditQuery, out []tokens.AuditEntry, keys []*mvccpb.KeyValue, at int) ([]tokens.AuditEntry, error) {
	base := s.auditBase(q.Stream)
	for len(keys) > 0 && len(out) < q.Limit {
		n := min(len(keys), 128)
		ops := make([]clientv3.Op, n)
		for i, kv := range keys[:n] {
			ops[i] = clientv3.OpGet(base + string(kv.Key[at:]))
		}
		resp, err := s.cli.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return nil, err
		}
		for _, r := range resp.Responses {
			for _, kv := range r.GetResponseRange().Kvs {
				e, err := decodeAudit(kv.Key, kv.Value)
				if err != nil {
					return nil, err
				}
				if q.Matches(e) && len(out) < q.Limit {
					out = append(out, e)
				}
			}
		}
		keys = keys[n:]
	}
	return out, nil
}

// ListAuditResources seeks the resource indexes once per name (a get of
// one key), or reads the whole log while the backfill runs
// (auditIndexReady); see tokens.AuditResourceLister.
func (s *Store) ListAuditResources(ctx context.Context, q tokens.AuditResourceQuery) ([]string, error) {
	if s.conn.Closed() {
		return nil, unavailable("audit", "", ErrClosed)
	}
	ready, err := s.auditIndexReady(ctx)
	if err != nil {
		return nil, unavailable("audit", "", err)
	}
	if !ready {
		out, err := s.scanAuditResources(ctx, q)
		if err != nil {
			return nil, unavailable("audit", "", err)
		}
		return out, nil
	}
	out, err := tokens.ListAuditResourcesBy(q, func(stream tokens.AuditStream, seek string) (string, error) {
		ibase := s.auditIndexBase(stream)
		resp, err := s.cli.Get(ctx, ibase+seek, clientv3.WithRange(clientv3.GetPrefixRangeEnd(ibase)),
			clientv3.WithLimit(1), clientv3.WithKeysOnly())
		if err != nil || len(resp.Kvs) == 0 {
			return "", err
		}
		return string(resp.Kvs[0].Key[len(ibase):]), nil
	})
	if err != nil {
		return nil, unavailable("audit", "", err)
	}
	return out, nil
}

// scanAuditResources answers q by reading every entry of every stream:
// the way while older entries are not yet indexed.
func (s *Store) scanAuditResources(ctx context.Context, q tokens.AuditResourceQuery) ([]string, error) {
	seen := map[string]bool{}
	for _, stream := range tokens.AuditStreams() {
		base := s.auditBase(stream)
		from, end := base, clientv3.GetPrefixRangeEnd(base)
		for {
			resp, err := s.cli.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(auditScanBatch))
			if err != nil {
				return nil, err
			}
			for _, kv := range resp.Kvs {
				e, err := decodeAudit(kv.Key, kv.Value)
				if err != nil {
					return nil, err
				}
				if e.Resource != "" && e.Resource > q.After && strings.HasPrefix(e.Resource, q.Prefix) {
					seen[e.Resource] = true
				}
			}
			if !resp.More || len(resp.Kvs) == 0 {
				break
			}
			from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		}
	}
	out := slices.Sorted(maps.Keys(seen))
	return out[:min(len(out), q.Limit)], nil
}
