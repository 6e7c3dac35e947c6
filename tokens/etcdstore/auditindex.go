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

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// The audit's secondary index: P + auditIndexSub + stream + "/" + one
// empty key per entry and resource, per entry and kind (the prefixes of
// tokens.AuditIndexPrefix) and per entry in time order (auditTimeIndex),
// each ending in the entry's ID inverted (auditInvertID) so that ascending
// key order is newest first. They are put in the transaction that puts
// the entry and deleted in the one that deletes it. A query by resource or
// kind reads its index prefix, an unfiltered one the time index, then only
// the entries named.
const (
	auditIndexSub = "\x00auditidx2/"
	// auditIndexVersion, once present, says every entry is indexed: the
	// one-time backfill of entries written before this layout has run.
	auditIndexVersion = "\x00auditidx2-version"
	// auditBackfillCursor + stream holds the last ID the backfill indexed.
	auditBackfillCursor = "\x00auditidx2-backfill/"
	// auditTimeIndex is the prefix of the index keys of every entry.
	auditTimeIndex = "t/"
)

// The first layout of the index, with IDs in ascending order, which the
// backfill replaces and then deletes (auditbackfill.go).
const (
	auditIndexV1Sub       = "\x00auditidx/"
	auditIndexV1Version   = "\x00auditidx-version"
	auditBackfillV1Cursor = "\x00auditidx-backfill/"
)

// auditOpsPerEntry is how many operations putting or deleting one entry
// takes: the entry and its index keys.
const auditOpsPerEntry = 4

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

// auditIndexKeys returns e's index keys, relative to its stream's index:
// by resource, by kind and by time, each ending in e.ID inverted.
func auditIndexKeys(e tokens.AuditEntry) []string {
	inv := auditInvertID(e.ID)
	return []string{tokens.AuditIndexPrefix("r", e.Resource) + inv, tokens.AuditIndexPrefix("k", e.Kind) + inv,
		auditTimeIndex + inv}
}

// auditPutOps returns the operations that write e: the entry and its
// index keys. An entry whose ID is not of tokens.AuditID's form (lowercase
// hex) is refused: its index keys would not sort.
func (s *Store) auditPutOps(e tokens.AuditEntry) ([]clientv3.Op, error) {
	if !e.Stream.Valid() || !canonicalAuditID(e.ID) {
		return nil, fmt.Errorf("audit entry %q of stream %q: invalid", e.ID, e.Stream)
	}
	v, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("audit entry %q: %w", e.ID, err)
	}
	ops := []clientv3.Op{clientv3.OpPut(s.auditBase(e.Stream)+e.ID, string(v))}
	for _, k := range auditIndexKeys(e) {
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
	e.ID = key[len(s.auditBase(stream)):]
	ops := []clientv3.Op{clientv3.OpDelete(key)}
	for _, k := range auditIndexKeys(e) {
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

// CountAuditIndex returns how many index keys by resource and by kind
// stream holds (see storetest.AuditIndexCounter), two per entry, and fails
// unless its time index holds one key per entry: the three counts and the
// entries' are read in one transaction.
func (s *Store) CountAuditIndex(ctx context.Context, stream tokens.AuditStream) (int, error) {
	ibase := s.auditIndexBase(stream)
	count := func(prefix string) clientv3.Op {
		return clientv3.OpGet(prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	}
	resp, err := s.cli.Txn(ctx).Then(count(ibase+"r/"), count(ibase+"k/"), count(ibase+auditTimeIndex),
		count(s.auditBase(stream))).Commit()
	if err != nil {
		return 0, unavailable("audit", "", err)
	}
	var n [4]int64
	for i, r := range resp.Responses {
		n[i] = r.GetResponseRange().Count
	}
	if n[2] != n[3] {
		return 0, unavailable("audit", "", fmt.Errorf("the %s time index holds %d keys for %d entries", stream, n[2], n[3]))
	}
	return int(n[0] + n[1]), nil
}

// listAuditIndexed reads the index keys under ibase (an index prefix of
// q's stream) of the IDs in [lo, hi), highest first: ascending range
// reads of at most auditScanBatch keys, each followed by reads of the
// entries they name, until q.Limit entries matched. An index key whose
// entry is gone (a purge under way) is skipped.
func (s *Store) listAuditIndexed(ctx context.Context, q tokens.AuditQuery, ibase, lo, hi string) ([]tokens.AuditEntry, error) {
	from, to := auditInvRange(ibase, lo, hi)
	var out []tokens.AuditEntry
	for len(out) < q.Limit {
		// A page of a few entries reads a few more keys than it needs,
		// not a whole batch.
		batch := min(auditScanBatch, max(q.Limit-len(out), 32))
		resp, err := s.cli.Get(ctx, from, clientv3.WithRange(to), clientv3.WithLimit(int64(batch)), clientv3.WithKeysOnly())
		if err != nil {
			return nil, err
		}
		ids := make([]string, 0, len(resp.Kvs))
		more := resp.More
		for _, kv := range resp.Kvs {
			id := auditInvertID(string(kv.Key[len(ibase):]))
			in, next := auditIDIn(id, lo, hi)
			if !next {
				more = false
				break
			}
			if in {
				ids = append(ids, id)
			}
		}
		if out, err = s.appendAuditEntries(ctx, q, out, ids); err != nil {
			return nil, err
		}
		if !more || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	return out, nil
}

// appendAuditEntries reads, in transactions of up to 128 gets, the
// entries of q's stream with the given IDs, in their order, and appends
// those q selects to out, up to q.Limit.
func (s *Store) appendAuditEntries(ctx context.Context, q tokens.AuditQuery, out []tokens.AuditEntry, ids []string) ([]tokens.AuditEntry, error) {
	base := s.auditBase(q.Stream)
	for len(ids) > 0 && len(out) < q.Limit {
		n := min(len(ids), 128)
		ops := make([]clientv3.Op, n)
		for i, id := range ids[:n] {
			ops[i] = clientv3.OpGet(base + id)
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
		ids = ids[n:]
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
