package etcdstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// Mark returns the HWM of resource and the life of the lease of that name;
// see tokens.Store. One linearizable transaction reads the HWM key, the
// lease record and the alive key: the grant is live exactly while its alive
// key exists, so a release or lapse is seen at once. How long it stays live
// comes from its etcd lease's remaining TTL, which etcd gives in whole
// seconds rounded down; it is asked once per etcd lease and remembered
// until the moment it named passes (a renewal only moves the expiry later,
// so what is remembered stays a lower bound). Left is therefore up to a
// second short, and a grant with less than a second left reads as lapsed
// a little before etcd deletes its alive key.
func (s *Store) Mark(ctx context.Context, resource string) (tokens.Mark, error) {
	const op = "mark"
	if err := tokens.ValidateResource(resource); err != nil {
		return tokens.Mark{}, err
	}
	if s.conn.Closed() {
		return tokens.Mark{}, unavailable(op, resource, ErrClosed)
	}
	key := s.key(resource)
	tr, err := s.cli.Txn(ctx).Then(clientv3.OpGet(key), clientv3.OpGet(s.leaseKey(resource)), clientv3.OpGet(s.aliveKey(resource)),
		clientv3.OpGet(s.issuedKey(resource))).Commit()
	if err != nil {
		return tokens.Mark{}, unavailable(op, resource, fmt.Errorf("get %q and its lease: %w", key, err))
	}
	kvs, err := ranges(tr.Responses, 4)
	if err != nil {
		return tokens.Mark{}, unavailable(op, resource, err)
	}
	var m tokens.Mark
	if m.HWM, _, err = readEpoch(key, kvs[0]); err != nil {
		return tokens.Mark{}, unavailable(op, resource, err)
	}
	if len(kvs[1]) == 0 {
		// Never leased (no issued epoch), or reclaimed: then still leased,
		// at its issued epoch, not live.
		if m.Lease.Epoch, _, err = readEpoch(s.issuedKey(resource), kvs[3]); err != nil {
			return tokens.Mark{}, unavailable(op, resource, err)
		}
		return m, nil
	}
	var st leaseState
	if st.rec, err = decodeRecord(kvs[1][0]); err != nil {
		return tokens.Mark{}, unavailable(op, resource, err)
	}
	st.found = true
	m.Lease = tokens.LeaseLife{Epoch: st.rec.Epoch, Released: st.rec.Released}
	if len(kvs[2]) == 0 || st.rec.Released {
		return m, nil // lapsed or released
	}
	if err := checkAlive(kvs[2][0], st); err != nil {
		return tokens.Mark{}, unavailable(op, resource, err)
	}
	left, err := s.left(ctx, clientv3.LeaseID(kvs[2][0].Lease))
	if err != nil {
		return tokens.Mark{}, unavailable(op, resource, err)
	}
	m.Lease.Left = left
	return m, nil
}

// left is a lower bound of how long etcd lease id lives from now.
func (s *Store) left(ctx context.Context, id clientv3.LeaseID) (time.Duration, error) {
	start := time.Now()
	if until, ok := s.lives.get(id); ok && until.After(start) {
		return until.Sub(start), nil
	}
	resp, err := s.cli.TimeToLive(ctx, id)
	switch {
	case isLeaseNotFound(err):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("time to live of etcd lease %x: %w", int64(id), err)
	case resp.TTL <= 0:
		return 0, nil
	}
	// etcd measured the remaining TTL after start: start plus it is no
	// later than the expiry.
	until := start.Add(time.Duration(resp.TTL) * time.Second)
	s.lives.put(id, until)
	return time.Until(until), nil
}

// maxLives bounds the etcd leases whose expiry a Store remembers.
const maxLives = 1 << 14

// lifeCache remembers, per etcd lease, a moment (with a monotonic reading)
// before which it is known live.
type lifeCache struct {
	mu    sync.Mutex
	until map[clientv3.LeaseID]time.Time
}

func newLifeCache() *lifeCache { return &lifeCache{until: make(map[clientv3.LeaseID]time.Time)} }

func (c *lifeCache) get(id clientv3.LeaseID) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.until[id]
	return t, ok
}

// put remembers until for id; when full, it first forgets every moment
// that passed, and everything if none had.
func (c *lifeCache) put(id clientv3.LeaseID, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.until) >= maxLives {
		now := time.Now()
		for k, t := range c.until {
			if !t.After(now) {
				delete(c.until, k)
			}
		}
		if len(c.until) >= maxLives {
			clear(c.until)
		}
	}
	c.until[id] = until
}
