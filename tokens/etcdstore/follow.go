package etcdstore

import (
	"context"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// WatchLease streams every change of lease name made through any replica,
// with one etcd watch from revision after+1 (after the revision read, for
// tokens.FromLatest); see tokens.LeaseWatcher. Each
// change's Seq is the etcd revision of its put: a put of the record (a
// grant, or a release of the live grant, which marks it released) or of the
// renewed key (a renewal). ExpiresAt is estimated as the TTL after the
// change arrived. When etcd compacted the revisions after after, the watch
// starts with the lease's state now, Gap set; so it does when after is
// beyond the lease's latest change (see beyond). The watch spans the keys
// from the lease's record key to its renewed key and skips the keys of
// other leases in between.
func (s *Store) WatchLease(ctx context.Context, name string, after int64) (<-chan tokens.LeaseChange, error) {
	if err := tokens.ValidateResource(name); err != nil {
		return nil, err
	}
	if s.conn.Closed() {
		return nil, unavailable("watch", name, ErrClosed)
	}
	out := make(chan tokens.LeaseChange)
	go s.follow(ctx, name, after, out)
	return out, nil
}

// follow sends the changes of name after after on out, then closes it.
func (s *Store) follow(ctx context.Context, name string, after int64, out chan<- tokens.LeaseChange) {
	defer close(out)
	restarted := false // ids restarted: the next change sent is a gap
	send := func(c tokens.LeaseChange) bool {
		c.Gap = c.Gap || restarted
		restarted = false
		if c.Seq <= after && !c.Gap {
			return true
		}
		select {
		case out <- c:
			after = c.Seq
			return true
		case <-ctx.Done():
			return false
		}
	}
	st, rev, err := s.readAt(ctx, name)
	if err != nil {
		return
	}
	from := after + 1
	switch {
	case after < 0:
		after = 0
		if st.found && !send(s.stateChange(ctx, name, st, false)) {
			return
		}
		from = rev + 1
	case beyond(st, after, rev):
		from = rev + 1
		if !st.found {
			// No state to send: the first change is the latest, a gap.
			after, restarted = rev, true
			break
		}
		if !send(s.stateChange(ctx, name, st, true)) {
			return
		}
	}
	rec, recRev := st.rec, st.recRev
	wch := s.cli.Watch(clientv3.WithRequireLeader(ctx), s.leaseKey(name),
		clientv3.WithRange(s.renewedKey(name)+"\x00"), clientv3.WithRev(from))
	for resp := range wch {
		if resp.CompactRevision != 0 {
			if st, _, err := s.readAt(ctx, name); err == nil && st.found {
				send(s.stateChange(ctx, name, st, true))
			}
			return
		}
		if resp.Err() != nil || resp.Canceled {
			return
		}
		for _, ev := range resp.Events {
			if ev.Type != mvccpb.PUT {
				continue
			}
			c, ok := s.changeOf(ctx, name, ev.Kv, &rec, &recRev)
			if ok && !send(c) {
				return
			}
		}
	}
}

// beyond reports whether a watch resuming after after, of a lease read as
// st at revision rev, resumes from beyond its latest change: ids restarted
// (a restored or new cluster), so the watch must start with its state. A
// renewal's key goes when its grant ends, so a resume from the last
// renewal of an ended grant counts too: its state is sent again.
func beyond(st leaseState, after, rev int64) bool {
	if !st.found {
		return after > rev
	}
	return after > max(st.recRev, st.renewedRev)
}

// readAt reads the lease's keys linearizably, with the revision read.
func (s *Store) readAt(ctx context.Context, name string) (leaseState, int64, error) {
	tr, err := s.cli.Txn(ctx).Then(s.readOps(name, false)...).Commit()
	if err != nil {
		return leaseState{}, 0, err
	}
	st, err := s.parseState(name, false, tr.Responses)
	return st, tr.Header.Revision, err
}

// stateChange is the lease in st as its latest change.
func (s *Store) stateChange(ctx context.Context, name string, st leaseState, gap bool) tokens.LeaseChange {
	l := s.view(ctx, name, st)
	return tokens.LeaseChange{Seq: l.Version, Lease: l, Gap: gap}
}

// changeOf decodes the put kv of one of the lease's keys into a change;
// rec and recRev are the latest record seen, which a put of the record
// replaces. ok is false for the keys of other leases and for what cannot be
// decoded.
func (s *Store) changeOf(ctx context.Context, name string, kv *mvccpb.KeyValue, rec *leaseRecord, recRev *int64) (tokens.LeaseChange, bool) {
	now := time.Now().UTC()
	switch string(kv.Key) {
	case s.leaseKey(name):
		r, err := decodeRecord(kv)
		if err != nil {
			return tokens.LeaseChange{}, false
		}
		*rec, *recRev = r, kv.ModRevision
		l := recordLease(name, r, kv.ModRevision)
		if r.Released {
			l.ExpiresAt = now
		} else {
			l.Held, l.ExpiresAt = true, now.Add(r.ttl())
		}
		return tokens.LeaseChange{Seq: kv.ModRevision, Lease: l}, true
	case s.renewedKey(name):
		epoch, err := decodeEpoch(string(kv.Key), kv.Value)
		if err != nil {
			return tokens.LeaseChange{}, false
		}
		if epoch != rec.Epoch || *recRev > kv.ModRevision {
			// A renewal replayed from before the record we hold: read
			// the record as it was then.
			resp, err := s.cli.Get(ctx, s.leaseKey(name), clientv3.WithRev(kv.ModRevision))
			if err != nil || len(resp.Kvs) == 0 {
				return tokens.LeaseChange{}, false
			}
			if *rec, err = decodeRecord(resp.Kvs[0]); err != nil {
				return tokens.LeaseChange{}, false
			}
			*recRev = resp.Kvs[0].ModRevision
		}
		l := recordLease(name, *rec, kv.ModRevision)
		l.Held, l.ExpiresAt = true, now.Add(rec.ttl())
		return tokens.LeaseChange{Seq: kv.ModRevision, Lease: l}, true
	}
	return tokens.LeaseChange{}, false
}

// recordLease is the lease rec names, at version.
func recordLease(name string, r leaseRecord, version int64) tokens.Lease {
	return tokens.Lease{Name: name, Holder: r.Holder, Epoch: r.Epoch, TTL: r.ttl(), LockDelay: r.lockDelay(),
		Released: r.Released, Version: version, Owner: r.Owner}
}
