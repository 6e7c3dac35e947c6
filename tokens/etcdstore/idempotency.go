package etcdstore

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// idemSub holds the idempotency records, under resource NUL key.
const idemSub = "\x00idem/"

func (s *Store) idemKey(resource, key string) string {
	return s.prefix + idemSub + resource + "\x00" + key
}

// maxIdemSlack bounds how much longer than its TTL an idempotency record
// may live: records share etcd leases, each granted for TTL plus the slack
// (TTL itself, at most maxIdemSlack) and used until less than TTL of it is
// left.
const maxIdemSlack = time.Hour

// idemLeases hands out the shared etcd lease records are attached to.
type idemLeases struct {
	mu  sync.Mutex
	id  clientv3.LeaseID
	end time.Time // when the lease lapses at the earliest
}

// idemLease returns an etcd lease that lives at least ttl from now.
func (s *Store) idemLease(ctx context.Context, ttl time.Duration) (clientv3.LeaseID, error) {
	l := s.idem
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.id != 0 && time.Until(l.end) > ttl {
		return l.id, nil
	}
	start := time.Now()
	id, granted, err := s.grant(ctx, ttlSeconds(ttl+min(ttl, maxIdemSlack)))
	if err != nil {
		return 0, err
	}
	l.id, l.end = id, start.Add(time.Duration(granted)*time.Second)
	return id, nil
}

// forgetLease drops the shared lease id (etcd no longer knows it).
func (s *Store) forgetLease(id clientv3.LeaseID) {
	s.idem.mu.Lock()
	defer s.idem.mu.Unlock()
	if s.idem.id == id {
		s.idem.id = 0
	}
}

// ClaimKey creates rec unless a record is there, in one Txn; see
// tokens.IdempotencyStore. Records live ttl to twice ttl (at most ttl plus
// an hour: they share etcd leases), and etcd deletes them.
func (s *Store) ClaimKey(ctx context.Context, resource, key string, rec tokens.IdemRecord, ttl time.Duration) (tokens.IdemRecord, bool, error) {
	if err := validIdem(resource, key); err != nil {
		return tokens.IdemRecord{}, false, err
	}
	if s.conn.Closed() {
		return tokens.IdemRecord{}, false, unavailable("claim", resource, ErrClosed)
	}
	v, err := json.Marshal(rec)
	if err != nil {
		return tokens.IdemRecord{}, false, err
	}
	k := s.idemKey(resource, key)
	for attempt := 0; ; attempt++ {
		id, err := s.idemLease(ctx, ttl)
		if err != nil {
			return tokens.IdemRecord{}, false, unavailable("claim", resource, err)
		}
		resp, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
			Then(clientv3.OpPut(k, string(v), clientv3.WithLease(id))).
			Else(clientv3.OpGet(k)).
			Commit()
		if isLeaseNotFound(err) && attempt < 2 {
			s.forgetLease(id)
			continue
		}
		if err != nil {
			return tokens.IdemRecord{}, false, unavailable("claim", resource, err)
		}
		if resp.Succeeded {
			return rec, true, nil
		}
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) != 1 {
			continue // it lapsed between the compare and the get
		}
		var got tokens.IdemRecord
		if err := json.Unmarshal(kvs[0].Value, &got); err != nil {
			return tokens.IdemRecord{}, false, unavailable("claim", resource, corrupt(kvs[0], err.Error()))
		}
		return got, false, nil
	}
}

// SettleKey settles claim's pending record with a Txn conditioned on the
// record read; see tokens.IdempotencyStore.
func (s *Store) SettleKey(ctx context.Context, resource, key, claim string, rec *tokens.IdemRecord) error {
	if err := validIdem(resource, key); err != nil {
		return err
	}
	if s.conn.Closed() {
		return unavailable("settle", resource, ErrClosed)
	}
	k := s.idemKey(resource, key)
	resp, err := s.cli.Get(ctx, k)
	if err != nil {
		return unavailable("settle", resource, err)
	}
	if len(resp.Kvs) != 1 {
		return tokens.ErrClaimLost
	}
	kv := resp.Kvs[0]
	var cur tokens.IdemRecord
	if err := json.Unmarshal(kv.Value, &cur); err != nil {
		return unavailable("settle", resource, corrupt(kv, err.Error()))
	}
	if cur.Claim != claim || cur.State != tokens.IdemPending {
		return tokens.ErrClaimLost
	}
	op := clientv3.OpDelete(k)
	if rec != nil {
		v, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		op = clientv3.OpPut(k, string(v), clientv3.WithIgnoreLease())
	}
	tr, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", kv.ModRevision)).Then(op).Commit()
	switch {
	case err != nil:
		return unavailable("settle", resource, err)
	case !tr.Succeeded:
		return tokens.ErrClaimLost
	}
	return nil
}

// PurgeKeys deletes nothing: etcd deletes expired records with their
// lease.
func (s *Store) PurgeKeys(context.Context, int) (int, error) { return 0, nil }

// ForgetKey deletes the record of resource and key; see
// tokens.IdempotencyStore.
func (s *Store) ForgetKey(ctx context.Context, resource, key string) (bool, error) {
	if err := validIdem(resource, key); err != nil {
		return false, err
	}
	if s.conn.Closed() {
		return false, unavailable("forget", resource, ErrClosed)
	}
	resp, err := s.cli.Delete(ctx, s.idemKey(resource, key))
	if err != nil {
		return false, unavailable("forget", resource, err)
	}
	return resp.Deleted > 0, nil
}

func validIdem(resource, key string) error {
	if err := tokens.ValidateResource(resource); err != nil {
		return err
	}
	return tokens.ValidateIdemKey(key)
}
