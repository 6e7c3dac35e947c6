package tokens

import (
	"context"
	"sync"
)

// confirmer coalesces linearizable HWM reads for one resource. At most one
// read runs at a time; requests that arrive while it runs wait for the next
// one, which starts only after they arrived, so its answer reflects every
// change that completed before any of them was called. A burst of N requests
// costs two reads, not N.
type confirmer struct {
	mu      sync.Mutex
	running bool
	next    *round // the round that will start when the running one ends
}

type round struct {
	done chan struct{}
	hwm  int64
	err  error
}

// await returns the result of a read that starts after await was called.
// read must not depend on the caller's context: other callers share it.
func (c *confirmer) await(ctx context.Context, read func() (int64, error)) (int64, error) {
	c.mu.Lock()
	r := c.next
	if r == nil {
		r = &round{done: make(chan struct{})}
		c.next = r
	}
	if !c.running {
		c.running = true
		c.next = nil
		go c.run(r, read)
	}
	c.mu.Unlock()
	select {
	case <-r.done:
		return r.hwm, r.err
	case <-ctx.Done():
		return 0, &UnavailableError{Op: "confirm", Err: ctx.Err()}
	}
}

// run performs r and then every round queued behind it.
func (c *confirmer) run(r *round, read func() (int64, error)) {
	for r != nil {
		r.hwm, r.err = read()
		close(r.done)
		c.mu.Lock()
		r = c.next
		c.next = nil
		if r == nil {
			c.running = false
		}
		c.mu.Unlock()
	}
}
