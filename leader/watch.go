package leader

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/fencegw/fencegw/wire"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The lease watch events (GET /v1/leases/{name}/watch) the Elector acts on.
const (
	eventAcquired = wire.EventAcquired
	eventRenewed  = wire.EventRenewed
	eventReleased = wire.EventReleased
	eventExpired  = wire.EventExpired
)

// leaseEvent is one event of the lease watch.
type leaseEvent wire.LeaseEvent

// free reports whether ev says the lease may be acquired now.
func (ev leaseEvent) free() bool { return ev.Event == eventReleased || ev.Event == eventExpired }

// ends reports whether ev ends a term at epoch: its grant was released or
// lapsed, or a later one was made.
func (ev leaseEvent) ends(epoch int64) bool {
	return int64(ev.Epoch) > epoch || (int64(ev.Epoch) == epoch && ev.Event != eventAcquired && ev.Event != eventRenewed)
}

// watch follows the lease's event stream, putting each event on out (the
// latest replaces one not yet taken), until ctx ends. A stream that cannot
// open or breaks is opened again after RetryPeriod, resuming after the last
// event. The watch only makes changes known sooner: campaigns poll and
// leaders renew as they would without it.
func (e *Elector) watch(ctx context.Context, out chan leaseEvent) {
	// The stream lasts: no client Timeout, the same connections.
	client := &http.Client{Transport: e.api.client.Transport}
	var last string
	for ctx.Err() == nil {
		err := e.api.watch(ctx, client, last, func(id string, ev leaseEvent) {
			last = id
			select {
			case <-out: // drop the one not taken
			default:
			}
			out <- ev
		})
		if ctx.Err() != nil {
			return
		}
		e.log.LogAttrs(ctx, slog.LevelDebug, "lease watch broke; polling until it reopens", slog.String("error", err.Error()))
		if !e.sleep(ctx, e.cfg.RetryPeriod) {
			return
		}
	}
}

// watch reads the lease's event stream, resuming after last, and calls fn
// with each event until the stream ends; it returns why.
func (a *api) watch(ctx context.Context, client *http.Client, last string, fn func(id string, ev leaseEvent)) error {
	u := *a.base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/leases/" + a.name + "/watch"
	u.RawPath = strings.TrimSuffix(a.base.EscapedPath(), "/") + "/v1/leases/" + url.PathEscape(a.name) + "/watch"
	req, err := wire.NewWatchRequest(ctx, u.String(), last, a.key)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("watch answered %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	var id, data string
	for sc.Scan() {
		switch line := sc.Text(); {
		case line == "":
			var ev leaseEvent
			if data != "" && json.Unmarshal([]byte(data), &ev) == nil {
				fn(id, ev)
			}
			id, data = "", ""
		case strings.HasPrefix(line, "id: "):
			id = line[len("id: "):]
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return fmt.Errorf("the stream ended")
}

// waitOrFree waits for d, or until a watch event says the lease is free;
// false when ctx ended first.
func (e *Elector) waitOrFree(ctx context.Context, d time.Duration, events <-chan leaseEvent) bool {
	timer := e.cfg.Clock.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			return true
		case ev := <-events:
			if ev.free() {
				return true
			}
		}
	}
}
