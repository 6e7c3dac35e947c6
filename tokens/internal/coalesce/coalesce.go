// Package coalesce shares reads among concurrent callers that ask about the
// same key, without ever answering a caller with a read that started before
// it asked. The fence's confirmations of a resource's high-water mark and the
// epoch sources' reads of a resource's leader both go through it: fencing
// depends on those reads being fresh, and coalescing must not weaken that.
package coalesce

import (
	"context"
	"errors"
	"sync"
)

// ErrClosed is returned by Do once the Group is closed, and to callers that
// were waiting for a read that Close kept from starting.
var ErrClosed = errors.New("coalesce: closed")

// Read reads the current value of key. Its context carries the values of the
// context of the caller whose arrival opened the read's round, but none of
// that caller's deadline or cancellation: it ends only when no caller waits
// for the read any more, or when the Group is closed. A Read that must be
// bounded in time sets its own deadline.
type Read[T any] func(ctx context.Context, key string) (T, error)

// Group coalesces the reads of one Read function, keyed by key (a resource
// name). Create it with New; it is safe for concurrent use.
type Group[T any] struct {
	read Read[T]

	mu     sync.Mutex
	keys   map[string]*flight[T] // keys with a read running; idle keys are removed
	closed bool

	reads     sync.WaitGroup // goroutines running reads
	closeOnce sync.Once
}

// flight is the state of one key: the read in flight and the round queued
// behind it.
type flight[T any] struct {
	running *round[T] // never nil while the flight is in Group.keys
	next    *round[T] // joined by callers that arrive while running runs; may be nil
}

// round is one read and the callers it answers.
type round[T any] struct {
	ctx     context.Context
	cancel  context.CancelFunc
	waiters int // callers still waiting; guarded by Group.mu

	done chan struct{} // closed once val and err are set
	val  T
	err  error
}

func newRound[T any](ctx context.Context) *round[T] {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &round[T]{ctx: rctx, cancel: cancel, done: make(chan struct{})}
}

// New returns a Group whose reads call read.
func New[T any](read Read[T]) *Group[T] {
	return &Group[T]{read: read, keys: make(map[string]*flight[T])}
}

// Do returns the result of a call of the Group's Read for key that started
// after Do was called, never of one already in flight (it may predate a
// change the caller must see).
//
// Per key, at most one read runs at a time. A caller that arrives while none
// runs starts one; a caller that arrives while one runs joins the next
// round, which starts when the running read returns and answers everyone
// who joined it. A burst of any number of concurrent callers for one key
// thus costs at most two reads. Reads of different keys run independently.
//
// A caller whose ctx has already ended gets ctx.Err() without a read. A
// caller whose ctx ends while it waits gets ctx.Err() at once, and the read
// goes on for the callers still waiting; a read that no caller waits for any
// more is cancelled if it runs, and never started if it is queued. The
// read's own error is returned unchanged.
func (g *Group[T]) Do(ctx context.Context, key string) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return zero, ErrClosed
	}
	var r *round[T]
	f := g.keys[key]
	switch {
	case f == nil:
		r = newRound[T](ctx)
		f = &flight[T]{running: r}
		g.keys[key] = f
		g.start(key, f, r)
	case f.next != nil:
		r = f.next
	default:
		r = newRound[T](ctx)
		f.next = r
	}
	r.waiters++
	g.mu.Unlock()

	select {
	case <-r.done:
		return r.val, r.err
	case <-ctx.Done():
	}
	g.mu.Lock()
	r.waiters--
	if r.waiters == 0 {
		r.cancel()
		if f.next == r {
			f.next = nil // nobody wants it: it never starts
		}
	}
	g.mu.Unlock()
	return zero, ctx.Err()
}

// start runs round r of flight f in a new goroutine. g.mu must be held.
func (g *Group[T]) start(key string, f *flight[T], r *round[T]) {
	g.reads.Add(1)
	go func() {
		defer g.reads.Done()
		v, err := g.read(r.ctx, key)
		g.finish(key, f, r, v, err)
	}()
}

// finish publishes r's result and starts the round queued behind it, or
// retires the flight when none is.
func (g *Group[T]) finish(key string, f *flight[T], r *round[T], v T, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r.val, r.err = v, err
	close(r.done)
	r.cancel()
	if next := f.next; next != nil && !g.closed {
		f.next = nil
		f.running = next
		g.start(key, f, next)
		return
	}
	delete(g.keys, key)
}

// Close makes later calls of Do fail with ErrClosed, releases the callers
// waiting for a round that has not started with ErrClosed, cancels the reads
// in flight and waits for them to return (their callers get what they
// return). It may be called more than once.
func (g *Group[T]) Close() {
	g.closeOnce.Do(func() {
		g.mu.Lock()
		g.closed = true
		for _, f := range g.keys {
			f.running.cancel()
			if r := f.next; r != nil {
				f.next = nil
				r.err = ErrClosed
				close(r.done)
				r.cancel()
			}
		}
		g.mu.Unlock()
		g.reads.Wait()
	})
}
