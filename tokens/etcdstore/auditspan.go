package etcdstore

import (
	"context"
	"fmt"
	"github.com/fencegw/fencegw/tokens/internal/auditid"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// auditSpanSub + stream holds the longest span (tokens.AuditSpan) of the
// stream's entries in milliseconds, as 13 digits so that etcd's byte
// comparison is numeric. It is raised before an entry that needs it is
// put, so a query since T may skip IDs that start before T minus it.
const auditSpanSub = "\x00auditidx-span/"

func (s *Store) auditSpanKey(stream tokens.AuditStream) string {
	return s.prefix + auditSpanSub + string(stream)
}

// raiseAuditSpans raises each stream's span to the longest of entries'.
func (s *Store) raiseAuditSpans(ctx context.Context, entries []tokens.AuditEntry) error {
	longest := map[tokens.AuditStream]time.Duration{}
	for _, e := range entries {
		longest[e.Stream] = max(longest[e.Stream], tokens.AuditSpan(e))
	}
	for stream, span := range longest {
		if err := s.raiseAuditSpan(ctx, stream, span); err != nil {
			return err
		}
	}
	return nil
}

// raiseAuditSpan raises stream's span to span unless it is that long
// already: one transaction the first time this Store sees a longer span,
// none after.
func (s *Store) raiseAuditSpan(ctx context.Context, stream tokens.AuditStream, span time.Duration) error {
	st := &s.auditIdx
	st.mu.Lock()
	known := st.spans[stream]
	st.mu.Unlock()
	if span <= known {
		return nil
	}
	k, v := s.auditSpanKey(stream), fmt.Sprintf("%013d", span.Milliseconds())
	raise := clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.Value(k), "<", v)}, []clientv3.Op{clientv3.OpPut(k, v)}, nil)
	_, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, v)).Else(raise).Commit()
	if err != nil {
		return err
	}
	st.mu.Lock()
	if st.spans == nil {
		st.spans = map[tokens.AuditStream]time.Duration{}
	}
	st.spans[stream] = max(st.spans[stream], span)
	st.mu.Unlock()
	return nil
}

// auditSpan returns the longest span of stream's entries:
// tokens.MaxAuditInterval when none is recorded.
func (s *Store) auditSpan(ctx context.Context, stream tokens.AuditStream) (time.Duration, error) {
	resp, err := s.cli.Get(ctx, s.auditSpanKey(stream))
	if err != nil || len(resp.Kvs) == 0 {
		return tokens.MaxAuditInterval, err
	}
	ms, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("corrupt audit span %q: %w", resp.Kvs[0].Value, err)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// auditNewestSub + stream holds the newest interval start (13 digits, in
// Unix milliseconds) of the stream's entries, raised in the transaction
// that puts them: where a list with no upper bound starts its first window
// of interval starts (listAuditIndexed). It is a hint: the first window
// also holds every ID above it.
const auditNewestSub = "\x00auditidx2-newest/"

func (s *Store) auditNewestKey(stream tokens.AuditStream) string {
	return s.prefix + auditNewestSub + string(stream)
}

// auditNewestOps is how many operations raising one stream's newest
// interval start takes, nested ones counted as etcd counts them.
const auditNewestOps = 4

// raiseAuditNewestOps returns the operations that raise each stream's
// newest interval start to the newest of entries': a transaction of
// auditNewestOps per stream.
func (s *Store) raiseAuditNewestOps(entries []tokens.AuditEntry) []clientv3.Op {
	newest := map[tokens.AuditStream]string{}
	for _, e := range entries {
		if len(e.ID) >= auditid.TimeDigits && e.ID[:auditid.TimeDigits] > newest[e.Stream] {
			newest[e.Stream] = e.ID[:auditid.TimeDigits]
		}
	}
	var ops []clientv3.Op
	for _, stream := range tokens.AuditStreams() {
		v, ok := newest[stream]
		if !ok {
			continue
		}
		k := s.auditNewestKey(stream)
		raise := clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.Value(k), "<", v)}, []clientv3.Op{clientv3.OpPut(k, v)}, nil)
		ops = append(ops, clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(k), "=", 0)},
			[]clientv3.Op{clientv3.OpPut(k, v)}, []clientv3.Op{raise}))
	}
	return ops
}

// auditNewest returns the newest interval start of stream's entries in
// Unix milliseconds, and false when none is recorded.
func (s *Store) auditNewest(ctx context.Context, stream tokens.AuditStream) (int64, bool, error) {
	resp, err := s.cli.Get(ctx, s.auditNewestKey(stream))
	if err != nil || len(resp.Kvs) == 0 {
		return 0, false, err
	}
	ms, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("corrupt audit newest start %q: %w", resp.Kvs[0].Value, err)
	}
	return ms, true, nil
}
