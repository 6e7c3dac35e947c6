package etcdstore

import (
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// auditIndexReady reports whether the index covers every entry. Until the
// version key says so, it runs a slice (auditBackfillSlice) of the one-time
// backfill that indexes entries written before the index; the backfill
// resumes where the last slice stopped, and a query it does not finish in
// time reads the stream itself.
func (s *Store) auditIndexReady(ctx context.Context) (bool, error) {
	if s.auditIdx.ready.Load() {
		return true, nil
	}
	s.auditIdx.mu.Lock()
	defer s.auditIdx.mu.Unlock()
	if s.auditIdx.ready.Load() {
		return true, nil
	}
	resp, err := s.cli.Get(ctx, s.prefix+auditIndexVersion)
	if err != nil {
		return false, err
	}
	if len(resp.Kvs) > 0 {
		s.auditIdx.ready.Store(true)
		return true, nil
	}
	slice, cancel := context.WithTimeout(ctx, auditBackfillSlice)
	defer cancel()
	err = s.backfillAuditIndex(slice)
	switch {
	case err != nil && slice.Err() != nil && ctx.Err() == nil:
		return false, nil // the slice is used up: the next query goes on
	case err != nil:
		return false, err
	}
	s.auditIdx.ready.Store(true)
	return true, nil
}

// backfillAuditIndex indexes every stream's entries in key order from its
// cursor on, recording each batch's last ID with the batch, then writes
// the version key.
func (s *Store) backfillAuditIndex(ctx context.Context) error {
	for _, stream := range []tokens.AuditStream{tokens.AuditRefusals, tokens.AuditLeases} {
		if err := s.backfillAuditStream(ctx, stream); err != nil {
			return fmt.Errorf("index the audit's %s: %w", stream, err)
		}
	}
	_, err := s.cli.Txn(ctx).Then(clientv3.OpPut(s.prefix+auditIndexVersion, "1"),
		clientv3.OpDelete(s.prefix+auditBackfillCursor, clientv3.WithPrefix())).Commit()
	return err
}

// backfillAuditStream indexes stream's entries after its cursor.
func (s *Store) backfillAuditStream(ctx context.Context, stream tokens.AuditStream) error {
	base, cursorKey := s.auditBase(stream), s.prefix+auditBackfillCursor+string(stream)
	from := base
	resp, err := s.cli.Get(ctx, cursorKey)
	if err != nil {
		return err
	}
	if len(resp.Kvs) > 0 {
		from = base + string(resp.Kvs[0].Value) + "\x00"
	}
	const perTxn = 60 // 2 index keys each, and the cursor
	for {
		page, err := s.cli.Get(ctx, from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(base)), clientv3.WithLimit(perTxn),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
		if err != nil || len(page.Kvs) == 0 {
			return err
		}
		ops := make([]clientv3.Op, 0, 2*len(page.Kvs)+1)
		for _, kv := range page.Kvs {
			var e tokens.AuditEntry
			if err := json.Unmarshal(kv.Value, &e); err != nil {
				return fmt.Errorf("corrupt audit entry %q: %w", kv.Key, err)
			}
			for _, k := range tokens.AuditIndexKeys(e) {
				ops = append(ops, clientv3.OpPut(s.auditIndexBase(stream)+k, ""))
			}
		}
		last := string(page.Kvs[len(page.Kvs)-1].Key)
		ops = append(ops, clientv3.OpPut(cursorKey, last[len(base):]))
		if _, err := s.cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			return err
		}
		from = last + "\x00"
	}
}
