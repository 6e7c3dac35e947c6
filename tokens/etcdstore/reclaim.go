package etcdstore

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Reclaiming keys. etcd keeps no time with a key, so the retention of an
// ended lease is kept by etcd's lease TTLs, on the cluster's clock: the
// first reclaim pass that finds a grant ended writes its ended key (the
// record's ModRevision) and a retain key attached to an etcd lease of the
// retention; a later pass that finds the same record with its ended key
// and no retain key deletes the record and the ended key.
const (
	endedSub  = "\x00ended/"
	retainSub = "\x00retain/"
)

// reclaimCursor is where the last reclaim scan of the lease records
// stopped: the next starts there and wraps to the first.
type reclaimCursor struct {
	mu   sync.Mutex
	from string // a lease name; "": the first
}

// ReclaimLeases deletes the records of at most limit leases that ended at
// least retention ago; see tokens.LeaseReclaimer. A record is deleted, with
// its ended key, in one transaction conditioned on the record being
// unchanged and on its grant having neither an alive key (held) nor a delay
// key (held, or in its lock-delay). The HWM and issued keys stay. A pass
// scans at most 4 × limit records from where the last one stopped.
func (s *Store) ReclaimLeases(ctx context.Context, retention time.Duration, limit int) (int, error) {
	const op = "reclaim leases"
	if s.conn.Closed() {
		return 0, unavailable(op, "", ErrClosed)
	}
	s.scan.mu.Lock()
	defer s.scan.mu.Unlock()
	recs, keys, err := s.reclaimScan(ctx, 4*limit)
	if err != nil {
		return 0, unavailable(op, "", err)
	}
	var retain clientv3.LeaseID
	n := 0
	for _, kv := range recs {
		if n >= limit {
			break
		}
		name := strings.TrimPrefix(string(kv.Key), s.prefix+leaseSub)
		if keys[aliveSub][name] != nil || keys[delaySub][name] != nil {
			continue // held, or in its lock-delay
		}
		rev := strconv.FormatInt(kv.ModRevision, 10)
		ended := keys[endedSub][name]
		if retention > 0 && (ended == nil || string(ended.Value) != rev) {
			if retain == 0 {
				if retain, err = s.grantRetention(ctx, retention); err != nil {
					return n, unavailable(op, name, err)
				}
			}
			if err := s.markEnded(ctx, name, kv.ModRevision, retain); err != nil {
				return n, unavailable(op, name, err)
			}
			continue
		}
		if retention > 0 && keys[retainSub][name] != nil {
			continue // ended less than retention ago
		}
		done, err := s.deleteEnded(ctx, name, kv.ModRevision)
		if err != nil {
			return n, unavailable(op, name, err)
		}
		if done {
			n++
		}
	}
	return n, nil
}

// reclaimScan reads at most max lease records from the cursor on (wrapping
// to the first when none is left), and, at the same revision, their alive,
// delay, ended and retain keys by sub-prefix and name. It moves the cursor
// past the last record read.
func (s *Store) reclaimScan(ctx context.Context, max int) ([]*mvccpb.KeyValue, map[string]map[string]*mvccpb.KeyValue, error) {
	lp := s.prefix + leaseSub
	resp, err := s.cli.Get(ctx, lp+s.scan.from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(lp)), clientv3.WithLimit(int64(max)))
	if err != nil {
		return nil, nil, err
	}
	if len(resp.Kvs) == 0 && s.scan.from != "" {
		s.scan.from = ""
		return s.reclaimScan(ctx, max)
	}
	keys := map[string]map[string]*mvccpb.KeyValue{}
	if len(resp.Kvs) == 0 {
		return nil, keys, nil
	}
	first := strings.TrimPrefix(string(resp.Kvs[0].Key), lp)
	last := strings.TrimPrefix(string(resp.Kvs[len(resp.Kvs)-1].Key), lp)
	s.scan.from = last + "\x00"
	if !resp.More {
		s.scan.from = ""
	}
	var ops []clientv3.Op
	subs := []string{aliveSub, delaySub, endedSub, retainSub}
	for _, sub := range subs {
		ops = append(ops, clientv3.OpGet(s.prefix+sub+first, clientv3.WithRange(s.prefix+sub+last+"\x00"),
			clientv3.WithRev(resp.Header.Revision)))
	}
	tr, err := s.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, nil, err
	}
	for i, sub := range subs {
		keys[sub] = map[string]*mvccpb.KeyValue{}
		for _, kv := range tr.Responses[i].GetResponseRange().GetKvs() {
			keys[sub][strings.TrimPrefix(string(kv.Key), s.prefix+sub)] = kv
		}
	}
	return resp.Kvs, keys, nil
}

// grantRetention grants the etcd lease a pass's retain keys share.
func (s *Store) grantRetention(ctx context.Context, retention time.Duration) (clientv3.LeaseID, error) {
	ttl := int64((retention + time.Second - 1) / time.Second)
	resp, err := s.cli.Grant(ctx, ttl)
	if err != nil {
		return 0, err
	}
	return resp.ID, nil
}

// markEnded writes name's ended key (the record's revision) and its retain
// key, unless the record changed since rev.
func (s *Store) markEnded(ctx context.Context, name string, rev int64, retain clientv3.LeaseID) error {
	_, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(s.leaseKey(name)), "=", rev)).
		Then(clientv3.OpPut(s.prefix+endedSub+name, strconv.FormatInt(rev, 10)),
			clientv3.OpPut(s.prefix+retainSub+name, "", clientv3.WithLease(retain))).
		Commit()
	return err
}

// deleteEnded deletes name's record and ended key if the record is still
// at rev and its grant has neither an alive nor a delay key.
func (s *Store) deleteEnded(ctx context.Context, name string, rev int64) (bool, error) {
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(s.leaseKey(name)), "=", rev),
			clientv3.Compare(clientv3.CreateRevision(s.aliveKey(name)), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(s.delayKey(name)), "=", 0)).
		Then(clientv3.OpDelete(s.leaseKey(name)), clientv3.OpDelete(s.prefix+endedSub+name)).
		Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}
