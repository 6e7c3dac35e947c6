package control

import (
	"context"
	"sync"
	"time"

	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/fencegw/fencegw/tokens"
)

// DefaultMaxWatchers caps the lease watches open at once in one process
// when Options.MaxWatchers is 0.
const DefaultMaxWatchers = 10_000

// Sizes of the hub's memory: each lease keeps its last keptEvents events
// for watchers that resume, and each watcher may fall watcherBuffer
// events behind before it is dropped.
const (
	keptEvents    = 256
	watcherBuffer = 64
)

// errTooManyWatchers answers a watch beyond the cap.
var errTooManyWatchers = problem.Refuse(problem.KindTooManyWatchers, "this gateway serves as many lease watches as it may; retry later or through another replica")

// watchHub fans lease changes out to this process's watchers from memory:
// one leaseHub per watched lease, which alone follows the store (one store
// watch, and one read at each expiry), whatever the number of watchers.
type watchHub struct {
	store tokens.Store
	// read reads a lease (the fence's Lease: counted and bounded).
	read func(ctx context.Context, name string) (tokens.Lease, error)
	max  int

	mu     sync.Mutex
	open   int // watchers subscribed, all leases together
	leases map[string]*leaseHub
}

func newWatchHub(store tokens.Store, read func(context.Context, string) (tokens.Lease, error), max int) *watchHub {
	if max <= 0 {
		max = DefaultMaxWatchers
	}
	return &watchHub{store: store, read: read, max: max, leases: make(map[string]*leaseHub)}
}

// watcher is one watch stream's subscription. Its events come on ch;
// dropped closes when it fell watcherBuffer events behind (it must end, so
// that its client resumes with Last-Event-ID) and is never closed
// otherwise.
type watcher struct {
	ch      chan leaseEvent
	dropped chan struct{}
	last    eventID // the last event sent to ch or in the backlog
}

// subscribe adds a watcher of name that has seen the events up to last
// (none when ok is false). It returns the backlog to send first: the
// events after last this process still keeps or, when last is unknown or
// too old, the event that says the lease's state now (if known yet).
// Beyond the cap it returns errTooManyWatchers.
func (h *watchHub) subscribe(name string, last eventID, ok bool) (*watcher, []leaseEvent, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.open >= h.max {
		return nil, nil, errTooManyWatchers
	}
	lh := h.leases[name]
	if lh == nil {
		lh = newLeaseHub(h, name, last, ok)
		h.leases[name] = lh
	}
	h.open++
	w := &watcher{ch: make(chan leaseEvent, watcherBuffer), dropped: make(chan struct{}), last: last}
	backlog := lh.add(w, ok)
	return w, backlog, nil
}

// unsubscribe removes w; the last watcher of a lease stops its leaseHub.
func (h *watchHub) unsubscribe(name string, w *watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.open--
	lh := h.leases[name]
	if lh != nil && lh.remove(w) == 0 {
		delete(h.leases, name)
		lh.stop()
	}
}

// retryWatch is how long a leaseHub waits before it follows the store
// again after its watch broke or a read failed.
const retryWatch = time.Second
