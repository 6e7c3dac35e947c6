package source

import (
	"context"
	"sync"
	"sync/atomic"
)

// Closer is what a Source keeps to be closed once: Close marks it closed
// and releases what it holds the first time only, and Closed says whether
// it has been. The zero Closer is open.
type Closer struct {
	closed atomic.Bool
	once   sync.Once
	err    error
}

// Close marks the Closer closed and, on the first call only, runs release;
// every call returns the first call's error.
func (c *Closer) Close(release func() error) error {
	c.once.Do(func() {
		c.closed.Store(true)
		c.err = release()
	})
	return c.err
}

// Closed reports whether Close has been called.
func (c *Closer) Closed() bool { return c.closed.Load() }

// ReadLeader returns what read says of resource, any error made a source's
// failure to say who leads it (see Unavailable) and the Leader then zero.
func ReadLeader(ctx context.Context, resource string, read func(context.Context, string) (Leader, error)) (Leader, error) {
	l, err := read(ctx, resource)
	if err != nil {
		return Leader{}, Unavailable(resource, err)
	}
	return l, nil
}
