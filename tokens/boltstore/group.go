package boltstore

import (
	"context"
	"runtime"
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
// caller that finds no commit running commits what is queued, its own raise
// among them; what queued meanwhile is committed by a goroutine that goes on
// until nothing is left. The others wait for the commit that holds their
// raise. No raise waits for a timer, and none returns before its
// transaction is on disk.
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
	lead := !c.running
	c.running = true
	c.mu.Unlock()
	if lead {
		c.gather()
		c.commitQueued()
		// Raises that queued during that commit are committed on: by a
		// goroutine of their own, so this caller's answer does not wait
		// for theirs.
		c.mu.Lock()
		more := len(c.queue) > 0
		c.running = more
		c.mu.Unlock()
		if more {
			go c.drain()
		}
	}
	select {
	case <-r.done:
		return r.verdict, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// gather lets goroutines that are ready to run join the leader's group
// before it commits. A commit's fsync holds the caller's P (the runtime
// hands it off only when sysmon notices, and sysmon sleeps up to 10 ms when
// idle), so with GOMAXPROCS=1 nothing else runs while it lasts: a leader
// that committed at once would commit alone, and so would the next. The
// leader yields while others keep joining, a few times at most; alone, that
// costs a few hundred nanoseconds.
func (c *committer) gather() {
	c.mu.Lock()
	n := len(c.queue)
	c.mu.Unlock()
	for range maxGatherYields {
		runtime.Gosched()
		c.mu.Lock()
		m := len(c.queue)
		c.mu.Unlock()
		if m == n {
			return
		}
		n = m
	}
}

// maxGatherYields bounds how often a leader yields before it commits.
const maxGatherYields = 8

// commitQueued commits what is queued now, as one group.
func (c *committer) commitQueued() {
	c.mu.Lock()
	group := c.queue
	c.queue = nil
	c.mu.Unlock()
	c.commit(group)
}

// drain commits groups until the queue is empty. The caller set running.
func (c *committer) drain() {
	for {
		c.gather()
		c.commitQueued()
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
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
