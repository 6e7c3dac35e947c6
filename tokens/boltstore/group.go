package boltstore

import (
	"context"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"

	"github.com/fencegw/fencegw/tokens"
)

// advanceReq is one raise of a HWM waiting for a group commit.
type advanceReq struct {
	resource string
	epoch    int64
	verdict  error // the store's refusal (stale, never issued), or nil
	err      error // the commit failed: the raise did not happen
	done     chan struct{}
}

// committer commits HWM raises in groups: one write transaction, one fsync,
// for every raise that arrived while the previous commit ran. The first
// caller that finds no commit running commits, and goes on committing what
// queued meanwhile until nothing is left; the others wait for the commit
// that holds their raise. No raise waits for a timer, and none returns
// before its transaction is on disk.
type committer struct {
	db *bolt.DB

	mu      sync.Mutex
	queue   []*advanceReq
	running bool
	commits atomic.Int64 // transactions committed, for tests
}

// advance raises resource's HWM to epoch in a group commit. It returns the
// store's verdict (a *tokens.StaleEpochError or *tokens.EpochNotIssuedError),
// or the commit's error. A caller whose ctx ends first gets ctx's error;
// its raise may still be committed.
func (c *committer) advance(ctx context.Context, resource string, epoch int64) (verdict, err error) {
	r := &advanceReq{resource: resource, epoch: epoch, done: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, r)
	if !c.running {
		c.running = true
		for len(c.queue) > 0 {
			group := c.queue
			c.queue = nil
			c.mu.Unlock()
			c.commit(group)
			c.mu.Lock()
		}
		c.running = false
	}
	c.mu.Unlock()
	select {
	case <-r.done:
		return r.verdict, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// commit applies group in one transaction, in order (a later raise of the
// same resource sees the earlier one), and tells each raise its outcome.
func (c *committer) commit(group []*advanceReq) {
	err := c.db.Update(func(tx *bolt.Tx) error {
		for _, r := range group {
			r.verdict = nil
			cur, err := get(tx, r.resource)
			if err != nil {
				return err
			}
			if r.epoch < cur {
				r.verdict = &tokens.StaleEpochError{Resource: r.resource, Presented: r.epoch, Current: cur}
				continue
			}
			issued, err := getFrom(tx, issuedBucket, r.resource)
			if err != nil {
				return err
			}
			if issued > 0 && r.epoch > issued {
				r.verdict = &tokens.EpochNotIssuedError{Resource: r.resource, Presented: r.epoch, Issued: issued}
				continue
			}
			if r.epoch > cur {
				if err := put(tx, bucket, r.resource, r.epoch); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err == nil {
		c.commits.Add(1)
	}
	for _, r := range group {
		if err != nil {
			r.verdict, r.err = nil, err
		}
		close(r.done)
	}
}
