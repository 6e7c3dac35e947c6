package source

import (
	"context"
	"sync"
)

// Coalesce returns a Source that shares reads of s among concurrent callers
// asking about the same resource, so that N concurrent checks cost about
// one read of s (at most two per burst) instead of N.
//
// Freshness is kept: a caller is only ever answered by a read of s that
// started after the caller called Current, never by one already in flight
// (that read may predate a takeover the caller must see). Per resource, at
// most one read runs at a time: a caller that arrives while none runs
// starts one; a caller that arrives while one runs joins the next round,
// which starts when the running read returns and answers everyone who
// joined it. Reads of different resources run independently.
//
// A shared read runs with the values of the context of the caller that
// created its round but is cancelled only when every caller waiting for it
// has given up (their contexts ended) or the Source is closed; bound reads
// with deadlines on the callers' contexts. A caller whose context ends gets
// ctx.Err() at once.
//
// Close fails later calls with ErrClosed, releases callers waiting for a
// round that has not started with ErrClosed, cancels the reads in flight and
// waits for them, then closes s and returns its error.
func Coalesce(s Source) Source {
	return &coalescer{src: s, groups: make(map[string]*group)}
}

type coalescer struct {
	src Source

	mu     sync.Mutex
	groups map[string]*group // resources with a read running; idle ones are removed
	closed bool

	reads     sync.WaitGroup // goroutines running reads of src
	closeOnce sync.Once
	closeErr  error
}

// group is the state of one resource: the read in flight and the round
// queued behind it.
type group struct {
	running *round // never nil while the group is in coalescer.groups
	next    *round // joined by callers arriving while running runs; may be nil
}

// round is one read of the source and the callers it answers.
type round struct {
	ctx     context.Context
	cancel  context.CancelFunc
	waiters int // callers still waiting; guarded by coalescer.mu

	done   chan struct{} // closed when leader and err are set
	leader Leader
	err    error
}

func newRound(ctx context.Context) *round {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &round{ctx: rctx, cancel: cancel, done: make(chan struct{})}
}

// Current returns the result of a read of the underlying source for
// resource that started after Current was called.
func (c *coalescer) Current(ctx context.Context, resource string) (Leader, error) {
	if err := ctx.Err(); err != nil {
		return Leader{}, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return Leader{}, ErrClosed
	}
	var r *round
	g := c.groups[resource]
	switch {
	case g == nil:
		r = newRound(ctx)
		g = &group{running: r}
		c.groups[resource] = g
		c.start(resource, g, r)
	case g.next != nil:
		r = g.next
	default:
		r = newRound(ctx)
		g.next = r
	}
	r.waiters++
	c.mu.Unlock()

	select {
	case <-r.done:
		return r.leader, r.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	r.waiters--
	if r.waiters == 0 {
		r.cancel()
		if g.next == r {
			g.next = nil // nobody wants it: it never starts
		}
	}
	c.mu.Unlock()
	return Leader{}, ctx.Err()
}

// start runs round r of group g in a new goroutine. c.mu must be held.
func (c *coalescer) start(resource string, g *group, r *round) {
	c.reads.Add(1)
	go func() {
		defer c.reads.Done()
		l, err := c.src.Current(r.ctx, resource)
		c.finish(resource, g, r, l, err)
	}()
}

// finish publishes r's result and starts the round queued behind it, or
// retires the group when none is.
func (c *coalescer) finish(resource string, g *group, r *round, l Leader, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r.leader, r.err = l, err
	close(r.done)
	r.cancel()
	if next := g.next; next != nil && !c.closed {
		g.next = nil
		g.running = next
		c.start(resource, g, next)
		return
	}
	delete(c.groups, resource)
}

// Close closes the coalescing Source and then the Source it wraps.
func (c *coalescer) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		for _, g := range c.groups {
			g.running.cancel()
			if r := g.next; r != nil {
				g.next = nil
				r.err = ErrClosed
				close(r.done)
				r.cancel()
			}
		}
		c.mu.Unlock()
		c.reads.Wait()
		c.closeErr = c.src.Close()
	})
	return c.closeErr
}
