package etcdstore

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/fencegw/fencegw/tokens/internal/auditid"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// The audit's secondary index: P + auditIndexSub + stream + "/" + one
// empty key per entry and resource, per entry and kind (the prefixes of
// tokens.AuditIndexPrefix) and per entry in time order (auditTimeIndex),
// each ending in the entry's ID inverted (auditid.Invert) so that ascending
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
// default limit of 128 operations (nested ones included) with the
// operations that raise each stream's newest interval start.
const auditTxnEntries = (128 - 3*auditNewestOps) / auditOpsPerEntry

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
	inv := auditid.Invert(e.ID)
	return []string{tokens.AuditIndexPrefix("r", e.Resource) + inv, tokens.AuditIndexPrefix("k", e.Kind) + inv,
		auditTimeIndex + inv}
}

// auditPutOps returns the operations that write e: the entry and its
// index keys. An entry whose ID is not of tokens.AuditID's form (lowercase
// hex) is refused: its index keys would not sort.
func (s *Store) auditPutOps(e tokens.AuditEntry) ([]clientv3.Op, error) {
	if !e.Stream.Valid() || !auditid.Canonical(e.ID) {
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
// q's stream) of the IDs in [lo, hi), highest first, each read followed
// by reads of the entries its keys name, until q.Limit entries matched.
// An index key whose entry is gone (a purge under way) is skipped.
//
// Each read is an ascending range read with a limit, and also bounded in
// time: etcd counts every key of a range it reads, whatever the limit, so
// a read of the rest of a long index would cost the whole index. A read
// covers a window of interval starts below the last ID read (the first,
// also every ID above it), starting from the stream's newest interval
// start (auditNewest; the clock's now when none is recorded) or hi's,
// whichever is lower. A window that filled the read's limit is followed
// by one as long as the interval starts it returned spanned; one that did
// not, by one twice as long (eight times when it held no key). So a read
// counts about as many keys as it returns.
func (s *Store) listAuditIndexed(ctx context.Context, q tokens.AuditQuery, ibase, lo, hi string) ([]tokens.AuditEntry, error) {
	t, err := s.auditListStart(ctx, q.Stream, hi)
	if err != nil {
		return nil, err
	}
	top, width := hi, auditWindow.Milliseconds()
	var out []tokens.AuditEntry
	for len(out) < q.Limit {
		winLo := lo
		if t-width > 0 {
			winLo = max(lo, fmt.Sprintf("%0*d", auditid.TimeDigits, t-width))
		}
		// A page of a few entries reads a few more keys than it needs,
		// not a whole batch.
		batch := min(auditScanBatch, max(q.Limit-len(out), 32))
		from, to := auditid.InvertedRange(ibase, winLo, top)
		resp, err := s.cli.Get(ctx, from, clientv3.WithRange(to), clientv3.WithLimit(int64(batch)), clientv3.WithKeysOnly())
		if err != nil {
			return nil, err
		}
		ids, done := auditIndexIDs(resp.Kvs, len(ibase), lo, hi)
		if out, err = s.appendAuditEntries(ctx, q, out, ids); err != nil || done {
			return out, err
		}
		if resp.More && len(resp.Kvs) > 0 {
			first := auditIDStart(auditid.Invert(string(resp.Kvs[0].Key[len(ibase):])))
			top = auditid.Invert(string(resp.Kvs[len(resp.Kvs)-1].Key[len(ibase):]))
			t = auditIDStart(top)
			width = max(first-t, 1)
			continue
		}
		if winLo == lo {
			break
		}
		top, t = winLo, t-width
		switch {
		case len(resp.Kvs) == 0:
			width *= 8
		case len(resp.Kvs) < batch/2:
			width *= 2
		}
	}
	return out, nil
}

// auditListStart returns the interval start a list of the IDs below hi
// starts its first window at (listAuditIndexed): hi's interval start or
// the stream's newest, whichever is lower; the clock's now when neither
// is known.
func (s *Store) auditListStart(ctx context.Context, stream tokens.AuditStream, hi string) (int64, error) {
	newest, ok, err := s.auditNewest(ctx, stream)
	if err != nil {
		return 0, err
	}
	switch {
	case auditid.HasTimePart(hi) && ok:
		return min(auditIDStart(hi), newest), nil
	case auditid.HasTimePart(hi):
		return auditIDStart(hi), nil
	case ok:
		return newest, nil
	}
	return s.clock.Now().UnixMilli(), nil
}

// auditIDStart returns the interval start of an ID that begins with 13
// digits (auditid.HasTimePart), in Unix milliseconds.
func auditIDStart(id string) int64 {
	ms, _ := strconv.ParseInt(id[:auditid.TimeDigits], 10, 64)
	return ms
}

// auditWindow is the first window of interval starts a list reads
// (listAuditIndexed).
const auditWindow = time.Second

// auditIndexIDs returns the IDs that the index keys kvs end in (after
// their first at bytes) in [lo, hi), in their order, and whether one
// below lo ended the list.
func auditIndexIDs(kvs []*mvccpb.KeyValue, at int, lo, hi string) (ids []string, done bool) {
	ids = make([]string, 0, len(kvs))
	for _, kv := range kvs {
		id := auditid.Invert(string(kv.Key[at:]))
		in, more := auditid.In(id, lo, hi)
		if !more {
			return ids, true
		}
		if in {
			ids = append(ids, id)
		}
	}
	return ids, false
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
		err := s.scanAudit(ctx, base, clientv3.GetPrefixRangeEnd(base), func(e tokens.AuditEntry) {
			if e.Resource != "" && e.Resource > q.After && strings.HasPrefix(e.Resource, q.Prefix) {
				seen[e.Resource] = true
			}
		})
		if err != nil {
			return nil, err
		}
	}
	out := slices.Sorted(maps.Keys(seen))
	return out[:min(len(out), q.Limit)], nil
}
