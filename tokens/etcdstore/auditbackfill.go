package etcdstore

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/fencegw/fencegw/tokens/internal/auditid"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// auditIndexReady reports whether the index covers every entry: once the
// version key says so. Until then it starts the one-time backfill that
// indexes entries written before the index, in the background (one at a
// time, ended by Close), and reports false: the caller reads the stream
// itself meanwhile.
func (s *Store) auditIndexReady(ctx context.Context) (bool, error) {
	if s.auditIdx.ready.Load() {
		return true, nil
	}
	if ready, err := s.auditIndexVersioned(ctx); err != nil || ready {
		return ready, err
	}
	s.startAuditBackfill()
	return false, nil
}

// IndexAudit indexes the audit's entries written before the index (by an
// older version), resuming where an interrupted run stopped, and records
// that every entry is indexed; until then queries read the whole range
// of IDs they select. The first audit read or write starts it in the
// background; call it to wait for it. Runs are one at a time: a call
// while another runs waits for it.
func (s *Store) IndexAudit(ctx context.Context) error {
	if ready, err := s.auditIndexVersioned(ctx); err != nil || ready {
		return err
	}
	run := s.auditIdx.runner()
	select {
	case run <- struct{}{}:
		defer func() { <-run }()
	case <-ctx.Done():
		return unavailable("audit index", "", ctx.Err())
	}
	// The run waited for may have completed the index.
	if ready, err := s.auditIndexVersioned(ctx); err != nil || ready {
		return err
	}
	if err := s.backfillAuditIndex(ctx); err != nil {
		return unavailable("audit index", "", err)
	}
	s.auditIdx.ready.Store(true)
	return nil
}

// startAuditBackfill runs IndexAudit in the background unless it runs
// already, has finished, or the Store is closed. A run that fails is
// started again by the next query.
func (s *Store) startAuditBackfill() {
	st := &s.auditIdx
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done != nil || s.conn.Closed() {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	st.cancel, st.done = cancel, done
	go func() {
		defer close(done)
		err := s.IndexAudit(ctx)
		cancel()
		if err != nil {
			st.mu.Lock()
			if st.done == done {
				st.done = nil
			}
			st.mu.Unlock()
		}
	}()
}

// runner returns the semaphore that lets one backfill run at a time.
func (st *auditIndexState) runner() chan struct{} {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.run == nil {
		st.run = make(chan struct{}, 1)
	}
	return st.run
}

// stop ends a backfill under way and waits for it.
func (st *auditIndexState) stop() {
	st.mu.Lock()
	cancel, done := st.cancel, st.done
	st.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if done != nil { // nil once a run failed: nothing runs
		<-done
	}
}

// backfillAuditIndex indexes every stream's entries in key order from its
// cursor on, recording each batch's last ID with the batch, deletes the
// index of the first layout, then writes the version key. Each step can
// be interrupted and resumed: the first layout's keys go before the
// version key says that the index is complete, so none outlive it.
func (s *Store) backfillAuditIndex(ctx context.Context) error {
	for _, stream := range tokens.AuditStreams() {
		if err := s.backfillAuditStream(ctx, stream); err != nil {
			return fmt.Errorf("index the audit's %s: %w", stream, err)
		}
	}
	if err := s.deleteAuditV1Index(ctx); err != nil {
		return fmt.Errorf("delete the audit's first index: %w", err)
	}
	_, err := s.cli.Txn(ctx).Then(clientv3.OpPut(s.prefix+auditIndexVersion, "2"),
		clientv3.OpDelete(s.prefix+auditBackfillCursor, clientv3.WithPrefix()),
		clientv3.OpDelete(s.prefix+auditIndexV1Version),
		clientv3.OpDelete(s.prefix+auditBackfillV1Cursor, clientv3.WithPrefix())).Commit()
	if err != nil {
		return fmt.Errorf("record the audit's index complete: %w", err)
	}
	return nil
}

// auditBackfillEntries is how many entries one backfill transaction
// indexes: three index keys each, the cursor and the stream's newest
// interval start, within etcd's default limit of 128 operations.
const auditBackfillEntries = (128 - 1 - auditNewestOps) / (auditOpsPerEntry - 1)

// backfillAuditStream indexes stream's entries after its cursor. Each
// transaction puts the index keys of entries that still exist as read
// (their creation revisions unchanged), so a purge under way leaves no
// index key behind; when one went, the batch is read again.
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
	for {
		page, err := s.cli.Get(ctx, from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(base)),
			clientv3.WithLimit(auditBackfillEntries))
		if err != nil || len(page.Kvs) == 0 {
			return err
		}
		ops := make([]clientv3.Op, 0, (auditOpsPerEntry-1)*len(page.Kvs)+1)
		cmps := make([]clientv3.Cmp, 0, len(page.Kvs))
		entries := make([]tokens.AuditEntry, 0, len(page.Kvs))
		for _, kv := range page.Kvs {
			var e tokens.AuditEntry
			if err := json.Unmarshal(kv.Value, &e); err != nil {
				return fmt.Errorf("corrupt audit entry %q: %w", kv.Key, err)
			}
			e.Stream, e.ID = stream, string(kv.Key[len(base):])
			entries = append(entries, e)
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(string(kv.Key)), "=", kv.CreateRevision))
			if !auditid.Canonical(e.ID) {
				continue // not listed by any index; purged by age as the others
			}
			for _, k := range auditIndexKeys(e) {
				ops = append(ops, clientv3.OpPut(s.auditIndexBase(stream)+k, ""))
			}
		}
		if err := s.raiseAuditSpans(ctx, entries); err != nil {
			return err
		}
		last := string(page.Kvs[len(page.Kvs)-1].Key)
		ops = append(ops, clientv3.OpPut(cursorKey, last[len(base):]))
		ops = append(ops, s.raiseAuditNewestOps(entries)...)
		done, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return err
		}
		if done.Succeeded {
			from = last + "\x00"
		}
	}
}

// deleteAuditV1Index deletes the keys of the index's first layout,
// tokens.AuditBatch at a time.
func (s *Store) deleteAuditV1Index(ctx context.Context) error {
	v1 := s.prefix + auditIndexV1Sub
	end := clientv3.GetPrefixRangeEnd(v1)
	for {
		resp, err := s.cli.Get(ctx, v1, clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(tokens.AuditBatch))
		if err != nil || len(resp.Kvs) == 0 {
			return err
		}
		upTo := string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		if _, err := s.cli.Txn(ctx).Then(clientv3.OpDelete(v1, clientv3.WithRange(upTo))).Commit(); err != nil {
			return err
		}
	}
}

// auditIndexVersioned reports whether the version key says every entry is
// indexed, writing it first when the audit holds no entry at all (a new
// store, or one whose entries all went: every entry it gets is indexed as
// it is written).
func (s *Store) auditIndexVersioned(ctx context.Context) (bool, error) {
	if s.auditIdx.ready.Load() {
		return true, nil
	}
	version := s.prefix + auditIndexVersion
	empty := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(version), "=", 0)}
	for _, stream := range tokens.AuditStreams() {
		empty = append(empty, clientv3.Compare(clientv3.CreateRevision(s.auditBase(stream)), "=", 0).WithPrefix())
	}
	resp, err := s.cli.Txn(ctx).If(empty...).
		Then(clientv3.OpPut(version, "2"), clientv3.OpDelete(s.prefix+auditIndexV1Version)).
		Else(clientv3.OpGet(version)).Commit()
	if err != nil {
		return false, err
	}
	if resp.Succeeded || len(resp.Responses[0].GetResponseRange().Kvs) > 0 {
		s.auditIdx.ready.Store(true)
		return true, nil
	}
	return false, nil
}
