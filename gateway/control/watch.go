package control

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/fencegw/fencegw/wire"
)

// The lease watch's events.
const (
	EventAcquired  = wire.EventAcquired
	EventRenewed   = wire.EventRenewed
	EventReleased  = wire.EventReleased
	EventExpired   = wire.EventExpired
	EventLockDelay = wire.EventLockDelay
)

// DefaultWatchHeartbeat is how often an idle lease watch sends a comment.
const DefaultWatchHeartbeat = 15 * time.Second

// expirySlack is how long after a lease's expiry a leaseHub reads it:
// the store must have seen it lapse by then.
const expirySlack = 100 * time.Millisecond

// leaseEvent is a lease watch's event: its data (wire.LeaseEvent) and how
// the gateway orders and sends it.
type leaseEvent struct {
	wire.LeaseEvent
	id      eventID
	encoded []byte // the event as sent, encoded once for every watcher
	// gap marks an event that says the lease's state whatever came before
	// (a store's Gap, or a hub's first change): it goes to every watcher
	// that has not seen its very id, even one whose last id is above it.
	gap bool
}

// watchLease streams a lease's changes as server-sent events: acquired,
// renewed, released, expired and lock_delay, made through any replica,
// each its own event, in order, with an id that rises (see eventID). A
// watch with a Last-Event-ID this process still keeps resumes after it;
// any other starts with the event that says the lease's current state. It
// sends a comment every heartbeat and ends when the client goes, falls
// watcherBuffer events behind, stops reading for the write timeout, or
// the gateway shuts down. Events come from the process's watchHub, which
// alone reads the store, however many watch; beyond MaxWatchers a watch
// is answered 503 with Retry-After.
func (c *control) watchLease(w http.ResponseWriter, r *http.Request) {
	name, ok := leaseName(w, r)
	if !ok {
		return
	}
	last, resume := parseEventID(r.Header.Get("Last-Event-ID"))
	sub, backlog, err := c.hub.subscribe(name, last, resume)
	if err != nil {
		c.leaseError(w, r, "watch", name, err)
		return
	}
	defer c.hub.unsubscribe(name, sub)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		_ = http.NewResponseController(w).Flush()
		return // the head is the whole answer
	}
	out := newSSEWriter(w, c.WatchWriteTimeout, c.Stopping)
	defer out.close()
	var buf []byte
	for _, ev := range backlog {
		buf = appendEvent(buf, ev)
	}
	if out.send(buf) != nil {
		return
	}
	c.streamEvents(r.Context(), sub, out)
}

// streamEvents writes sub's events to out until the watch ends.
func (c *control) streamEvents(ctx context.Context, sub *watcher, out *sseWriter) {
	every := c.WatchHeartbeat
	if every <= 0 {
		every = DefaultWatchHeartbeat
	}
	heartbeat := time.NewTicker(every)
	defer heartbeat.Stop()
	var buf []byte
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.Stopping:
			return
		case <-sub.dropped:
			return // it fell behind: the client resumes with Last-Event-ID
		case <-heartbeat.C:
			if out.send([]byte(": keep-alive\n\n")) != nil {
				return
			}
		case ev := <-sub.ch:
			buf = appendEvent(buf[:0], ev)
			for more := true; more; { // what else is pending goes in the same write
				select {
				case ev := <-sub.ch:
					buf = appendEvent(buf, ev)
				default:
					more = false
				}
			}
			if out.send(buf) != nil {
				return
			}
		}
	}
}

// appendEvent appends ev as one server-sent event.
func appendEvent(buf []byte, ev leaseEvent) []byte {
	if ev.encoded != nil {
		return append(buf, ev.encoded...)
	}
	data, _ := json.Marshal(ev.LeaseEvent)
	return fmt.Appendf(buf, "id: %s\nevent: %s\ndata: %s\n\n", ev.id, ev.Event, data)
}
