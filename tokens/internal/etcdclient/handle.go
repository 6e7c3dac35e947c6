package etcdclient

import (
	"sync"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Handle is a client as a store or an epoch source holds it: either
// borrowed from its caller, who keeps closing it, or owned (the holder
// opened it) and closed with the holder. It is safe for concurrent use.
type Handle struct {
	Client *clientv3.Client

	owned  bool
	closed atomic.Bool
	once   sync.Once
	err    error
}

// Borrowed returns a Handle whose Close leaves c open.
func Borrowed(c *clientv3.Client) *Handle { return &Handle{Client: c} }

// Owned returns a Handle whose Close closes c.
func Owned(c *clientv3.Client) *Handle { return &Handle{Client: c, owned: true} }

// Closed reports whether Close has been called. A holder checks it before
// each operation, so that a closed holder fails even on a borrowed client
// that is still open.
func (h *Handle) Closed() bool { return h.closed.Load() }

// Close marks h closed and closes the client if h owns it. It may be called
// more than once and returns the first call's error.
func (h *Handle) Close() error {
	h.once.Do(func() {
		h.closed.Store(true)
		if h.owned {
			h.err = h.Client.Close()
		}
	})
	return h.err
}
