package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// The lease watch's events.
const (
	EventAcquired  = "acquired"
	EventRenewed   = "renewed"
	EventReleased  = "released"
	EventExpired   = "expired"
	EventLockDelay = "lock_delay"
)

// DefaultWatchHeartbeat is how often an idle lease watch sends a comment.
const DefaultWatchHeartbeat = 15 * time.Second

// expirySlack is how long after a lease's expiry a watch reads it again:
// the store must have seen it lapse by then.
const expirySlack = 100 * time.Millisecond

// LeaseEvent is the data of a lease watch's event.
type LeaseEvent struct {
	Event     string    `json:"event"`
	Name      string    `json:"name"`
	Holder    string    `json:"holder"`
	Epoch     int64     `json:"epoch"`
	ExpiresAt time.Time `json:"expires_at"`
	// At is when this gateway saw the change.
	At time.Time `json:"at"`
	// LockDelayUntil is when the lock-delay after an unclean lapse ends
	// (lock_delay events).
	LockDelayUntil *time.Time `json:"lock_delay_until,omitempty"`
	version        int64
}

// id names the state an event leaves the lease in (epoch, version, and
// held, released or lapsed), for Last-Event-ID: a new watch whose current
// state has that id starts without repeating it.
func (e LeaseEvent) id() string {
	state := "held"
	switch e.Event {
	case EventReleased:
		state = "released"
	case EventExpired, EventLockDelay:
		state = "lapsed"
	}
	return strconv.FormatInt(e.Epoch, 10) + "." + strconv.FormatInt(e.version, 10) + "." + state
}

// watchLease streams a lease's changes as server-sent events: acquired,
// renewed, released, expired and lock_delay, made through any replica. It
// starts with the lease's current state (unless Last-Event-ID names that
// state already), sends a comment every heartbeat, and ends when the
// client goes or the gateway shuts down. It learns of changes from the
// store's notifications and, for lapses, from the expiry it read.
func (c *control) watchLease(w http.ResponseWriter, r *http.Request) {
	name, ok := leaseName(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	notes, err := c.Fence.Store().SubscribeLease(ctx, name)
	if err != nil {
		c.leaseError(w, r, "watch", name, err)
		return
	}
	prev, found, err := c.readLease(ctx, name)
	if err != nil {
		c.leaseError(w, r, "watch", name, err)
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if found {
		if ev := stateEvent(prev); ev.id() != r.Header.Get("Last-Event-ID") {
			writeEvent(w, ev)
		}
	}
	rc.Flush()
	if r.Method == http.MethodHead {
		return // the head is the whole answer
	}
	every := c.WatchHeartbeat
	if every <= 0 {
		every = DefaultWatchHeartbeat
	}
	heartbeat := time.NewTicker(every)
	defer heartbeat.Stop()
	retry := time.NewTimer(0)
	retry.Stop()
	for {
		expiry := time.NewTimer(time.Hour)
		if found && prev.Held {
			expiry.Reset(time.Until(prev.ExpiresAt) + expirySlack)
		} else {
			expiry.Stop()
		}
		select {
		case <-ctx.Done():
			expiry.Stop()
			return
		case <-c.Stopping:
			expiry.Stop()
			return
		case <-heartbeat.C:
			expiry.Stop()
			fmt.Fprint(w, ": keep-alive\n\n")
			rc.Flush()
			continue
		case <-notes:
		case <-expiry.C:
		case <-retry.C:
		}
		expiry.Stop()
		cur, curFound, err := c.readLease(ctx, name)
		if err != nil {
			retry.Reset(time.Second) // the store is down: read again soon
			continue
		}
		for _, ev := range changes(prev, found, cur, curFound) {
			writeEvent(w, ev)
		}
		rc.Flush()
		prev, found = cur, curFound
	}
}

// readLease reads a lease; found is false when it was never acquired.
func (c *control) readLease(ctx context.Context, name string) (tokens.Lease, bool, error) {
	l, err := c.Fence.Lease(ctx, name)
	if errors.Is(err, tokens.ErrLeaseNotFound) {
		return tokens.Lease{}, false, nil
	}
	return l, err == nil, err
}

// changes are the events that lead from the lease read as prev to cur
// (found and curFound: whether either read found it).
func changes(prev tokens.Lease, found bool, cur tokens.Lease, curFound bool) []LeaseEvent {
	switch {
	case !curFound:
		return nil
	case !found:
		return history(cur)
	case cur.Epoch != prev.Epoch:
		var evs []LeaseEvent
		if prev.Held { // it ended before the new grant, unseen
			kind := EventReleased
			if !prev.ExpiresAt.After(time.Now()) {
				kind = EventExpired
			}
			evs = append(evs, event(kind, prev))
		}
		return append(evs, history(cur)...)
	case prev.Held && cur.Held && cur.Version != prev.Version:
		return []LeaseEvent{event(EventRenewed, cur)}
	case prev.Held && !cur.Held:
		return ended(cur)
	}
	return nil
}

// history is a grant's acquired event and, when it is no longer held, how
// it ended.
func history(l tokens.Lease) []LeaseEvent {
	evs := []LeaseEvent{event(EventAcquired, l)}
	if !l.Held {
		evs = append(evs, ended(l)...)
	}
	return evs
}

// ended is how a grant no longer held ended: released, or expired and, with
// a lock-delay, lock_delay.
func ended(l tokens.Lease) []LeaseEvent {
	if l.Released {
		return []LeaseEvent{event(EventReleased, l)}
	}
	evs := []LeaseEvent{event(EventExpired, l)}
	if l.LockDelay > 0 {
		until := l.ExpiresAt.Add(l.LockDelay).UTC()
		ld := event(EventLockDelay, l)
		ld.LockDelayUntil = &until
		evs = append(evs, ld)
	}
	return evs
}

// stateEvent is the event that says what state l is in.
func stateEvent(l tokens.Lease) LeaseEvent {
	switch {
	case l.Held:
		return event(EventAcquired, l)
	case l.Released:
		return event(EventReleased, l)
	}
	return event(EventExpired, l)
}

func event(kind string, l tokens.Lease) LeaseEvent {
	return LeaseEvent{Event: kind, Name: l.Name, Holder: l.Holder, Epoch: l.Epoch, ExpiresAt: l.ExpiresAt.UTC(),
		At: time.Now().UTC(), version: l.Version}
}

// writeEvent writes ev as one server-sent event.
func writeEvent(w http.ResponseWriter, ev LeaseEvent) {
	data, _ := json.Marshal(ev)
	fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", ev.id(), ev.Event, data)
}
