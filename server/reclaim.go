package server

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// Defaults of the lease reclaim loop.
const (
	// reclaimEvery is how often ended leases' records are reclaimed.
	reclaimEvery = time.Minute
	// reclaimBatch bounds one reclaim call: a batch holds the embedded
	// store's lease lock (and one write transaction) for about as long as
	// reading 4 × reclaimBatch records takes.
	reclaimBatch = 100
	// reclaimPause separates two batches of one pass, so that renewals
	// and grants interleave with a long reclaim.
	reclaimPause = 50 * time.Millisecond
)

// reclaimTerms tune a reclaim loop.
type reclaimTerms struct {
	retention time.Duration // leases.retention
	every     time.Duration // between passes
	batch     int           // records per ReclaimLeases call
	timeout   time.Duration // bound on each call (store_timeout)
}

// reclaimLoop deletes the records of leases that ended leases.retention
// ago, in the background, in small batches; every replica runs one, and
// concurrent reclaims delete each record once. A nil loop does nothing.
type reclaimLoop struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// startReclaim starts a reclaim loop over store.
func startReclaim(store tokens.LeaseReclaimer, t reclaimTerms, log *slog.Logger) *reclaimLoop {
	r := &reclaimLoop{stop: make(chan struct{}), done: make(chan struct{})}
	go r.run(store, t, log)
	return r
}

// close stops the loop and waits for it; it is safe to call more than once.
func (r *reclaimLoop) close() {
	if r == nil {
		return
	}
	r.once.Do(func() { close(r.stop) })
	<-r.done
}

func (r *reclaimLoop) run(store tokens.LeaseReclaimer, t reclaimTerms, log *slog.Logger) {
	defer close(r.done)
	everyTick(r.stop, t.every, func() bool { return r.pass(store, t, log) })
}

// everyTick calls pass at every tick of a ticker of period every, until
// stop is closed or pass returns false.
func everyTick(stop <-chan struct{}, every time.Duration, pass func() bool) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if !pass() {
			return
		}
	}
}

// pass reclaims batches until one comes back short or fails; false when
// the loop was stopped meanwhile.
func (r *reclaimLoop) pass(store tokens.LeaseReclaimer, t reclaimTerms, log *slog.Logger) bool {
	total := 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), t.timeout)
		n, err := store.ReclaimLeases(ctx, t.retention, t.batch)
		cancel()
		total += n
		if err != nil {
			log.LogAttrs(context.Background(), slog.LevelWarn, "reclaiming ended leases failed", slog.String("error", err.Error()))
		}
		if err != nil || n < t.batch {
			break
		}
		select {
		case <-r.stop:
			return false
		case <-time.After(reclaimPause):
		}
	}
	if total > 0 {
		log.LogAttrs(context.Background(), slog.LevelDebug, "reclaimed ended leases", slog.Int("leases", total))
	}
	return true
}
