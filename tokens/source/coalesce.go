package source

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/internal/coalesce"
)

// Coalesced is a Source whose reads are shared among concurrent callers
// asking about the same resource, and the tokens.EpochSource a route checks
// presented epochs against. Create it with Coalesce.
type Coalesced struct {
	src     Source
	timeout time.Duration
	reads   *coalesce.Group[Leader]

	closeOnce sync.Once
	closeErr  error
}

var (
	_ Source             = (*Coalesced)(nil)
	_ tokens.EpochSource = (*Coalesced)(nil)
)

// Coalesce returns a Coalesced over s. Each read of s is bounded by timeout
// (none when it is not positive), as is each Check.
func Coalesce(s Source, timeout time.Duration) *Coalesced {
	c := &Coalesced{src: s, timeout: timeout}
	c.reads = coalesce.New(c.read)
	return c
}

func (c *Coalesced) read(ctx context.Context, resource string) (Leader, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	return c.src.Current(ctx, resource)
}

func (c *Coalesced) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.timeout)
}

// Current returns the result of a read of the wrapped Source for resource
// that started after Current was called, never of one already in flight
// (it may predate a takeover the caller must see). Concurrent calls for one
// resource share reads: a burst costs at most two (see package
// tokens/internal/coalesce for the exact rule). A caller whose ctx ends gets an
// error at once, without cancelling the read for the others. Every error
// wraps a *tokens.UnavailableError; after Close, one that also wraps
// ErrClosed.
func (c *Coalesced) Current(ctx context.Context, resource string) (Leader, error) {
	l, err := c.reads.Do(ctx, resource)
	if errors.Is(err, coalesce.ErrClosed) {
		err = ErrClosed
	}
	if err != nil {
		return Leader{}, Unavailable(resource, err)
	}
	return l, nil
}

// Check implements tokens.EpochSource: it reads resource's leader as
// Current does, within the timeout, and returns Check's verdict on epoch
// (nil, a *tokens.StaleEpochError or a *tokens.EpochNotIssuedError), or the
// error wrapping *tokens.UnavailableError when the source cannot answer.
func (c *Coalesced) Check(ctx context.Context, resource string, epoch int64) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	l, err := c.Current(ctx, resource)
	if err != nil {
		return err
	}
	return Check(l, resource, epoch)
}

// Close fails later calls with ErrClosed, releases callers waiting for a
// read that has not started, cancels the reads in flight and waits for
// them, then closes the wrapped Source and returns its error. It may be
// called more than once and returns the first call's error.
func (c *Coalesced) Close() error {
	c.closeOnce.Do(func() {
		c.reads.Close()
		c.closeErr = c.src.Close()
	})
	return c.closeErr
}
