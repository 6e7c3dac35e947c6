package gateway_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/control"
	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/fencegw/fencegw/tokens"
)

// countingStore counts, per lease name, the watches opened and the leases
// read through it.
type countingStore struct {
	tokens.Store
	mu    sync.Mutex
	calls map[string]int // "watch name", "lease name"
}

func newCountingStore(s tokens.Store) *countingStore {
	return &countingStore{Store: s, calls: make(map[string]int)}
}

func (s *countingStore) count(op, name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op+" "+name]
}

func (s *countingStore) add(op, name string) {
	s.mu.Lock()
	s.calls[op+" "+name]++
	s.mu.Unlock()
}

func (s *countingStore) WatchLease(ctx context.Context, name string, after int64) (<-chan tokens.LeaseChange, error) {
	s.add("watch", name)
	return s.Store.WatchLease(ctx, name, after)
}

func (s *countingStore) Lease(ctx context.Context, name string) (tokens.Lease, error) {
	s.add("lease", name)
	return s.Store.Lease(ctx, name)
}

func (s *countingStore) SubscribeLease(ctx context.Context, name string) (<-chan struct{}, error) {
	s.add("subscribe", name)
	return s.Store.SubscribeLease(ctx, name)
}

// expectEvent fails t unless w's next event is kind at epoch, with an id
// after the one before; it returns the event.
func expectEvent(t *testing.T, w *sse, kind string, epoch int64, before string) sseEvent {
	t.Helper()
	ev := w.next(t)
	if ev.kind != kind || int64(ev.data.Epoch) != epoch {
		t.Fatalf("event = %+v, want %s at epoch %d", ev, kind, epoch)
	}
	if before != "" && !idAfter(ev.id, before) {
		t.Fatalf("event id %q is not after %q", ev.id, before)
	}
	return ev
}

// idAfter compares two event ids, "seq" or "seq.step".
func idAfter(a, b string) bool {
	parse := func(s string) (int64, int64) {
		seq, step, _ := strings.Cut(s, ".")
		n, _ := strconv.ParseInt(seq, 10, 64)
		m, _ := strconv.ParseInt(step, 10, 64)
		return n, m
	}
	an, am := parse(a)
	bn, bm := parse(b)
	return an > bn || (an == bn && am > bm)
}

// TestLeaseWatchEveryChange: a grant, a renewal and a release made through
// another replica back to back are three events, in order, with rising
// ids: the renewal is not folded away. A watch resuming from the grant's
// id gets the renewal and the release, and nothing else.
func TestLeaseWatchEveryChange(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			gs := replicas(t, b, newUpstream(t), gatewayOptions{heartbeat: 200 * time.Millisecond}, 2, idemRoutes...)
			watcher, actor := gs[0], gs[1]
			w := watch(t, watcher, "quick", "")
			time.Sleep(300 * time.Millisecond) // the watch is in place
			a := leaseOf(t, actor.acquire(t, "quick", "node-a", 15))
			leaseOf(t, actor.renewLease(t, "quick", "node-a", int64(a.Epoch)))
			if r := actor.releaseLease(t, "quick", "node-a", int64(a.Epoch)); r.status != http.StatusNoContent {
				t.Fatalf("release = %d", r.status)
			}
			g := expectEvent(t, w, control.EventAcquired, int64(a.Epoch), "")
			r := expectEvent(t, w, control.EventRenewed, int64(a.Epoch), g.id)
			rel := expectEvent(t, w, control.EventReleased, int64(a.Epoch), r.id)
			w.cancel()

			resumed := watch(t, watcher, "quick", g.id)
			if ev := expectEvent(t, resumed, control.EventRenewed, int64(a.Epoch), g.id); ev.id != r.id {
				t.Fatalf("resumed renewal id %q, want %q", ev.id, r.id)
			}
			if ev := expectEvent(t, resumed, control.EventReleased, int64(a.Epoch), r.id); ev.id != rel.id {
				t.Fatalf("resumed release id %q, want %q", ev.id, rel.id)
			}
		})
	}
}

// TestLeaseWatchCoalesced: however many watch a lease, the gateway opens
// one store watch of it and reads it no more often: 200 watchers of one
// lease cost the store what 3 watchers of another do. The counts are of
// calls, not of time.
func TestLeaseWatchCoalesced(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			store := newCountingStore(b.fresh(t)(t))
			g := newGatewayWith(t, store, newUpstream(t), gatewayOptions{heartbeat: time.Hour}, idemRoutes...)
			watchers := map[string][]*sse{}
			for name, n := range map[string]int{"few": 3, "many": 200} {
				for range n {
					watchers[name] = append(watchers[name], watch(t, g, name, ""))
				}
			}
			time.Sleep(300 * time.Millisecond) // every watch is in place
			for name, ws := range watchers {
				a := leaseOf(t, g.acquire(t, name, "node-a", float64(b.shortTTL())))
				leaseOf(t, g.renewLease(t, name, "node-a", int64(a.Epoch)))
				for _, w := range ws { // every watcher sees the grant, the renewal and the lapse
					expectEvent(t, w, control.EventAcquired, int64(a.Epoch), "")
					expectEvent(t, w, control.EventRenewed, int64(a.Epoch), "")
					expectEvent(t, w, control.EventExpired, int64(a.Epoch), "")
				}
			}
			for _, name := range []string{"few", "many"} {
				if n := store.count("watch", name); n != 1 {
					t.Errorf("store watches of %q = %d, want 1", name, n)
				}
				if n := store.count("subscribe", name); n != 0 {
					t.Errorf("store subscriptions of %q through the gateway = %d, want 0", name, n)
				}
			}
			few, many := store.count("lease", "few"), store.count("lease", "many")
			t.Logf("lease reads: 3 watchers %d, 200 watchers %d", few, many)
			// Uncoalesced, each of 200 watchers would read at least once.
			if many > 8 || few > 8 {
				t.Errorf("lease reads: 3 watchers %d, 200 watchers %d; want a few, whatever the number of watchers", few, many)
			}
		})
	}
}

// TestLeaseWatchCap: beyond watch.max_watchers a watch is answered 503
// problem+json with Retry-After; once a watch ends, a new one is served.
func TestLeaseWatchCap(t *testing.T) {
	g := newGatewayWith(t, boltFresh(t)(t), newUpstream(t), gatewayOptions{maxWatchers: 2})
	first := watch(t, g, "capped", "")
	watch(t, g, "other", "")
	r := do(t, http.MethodGet, g.api.URL+"/v1/leases/capped/watch", nil, "")
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" ||
		r.header.Get("Content-Type") != "application/problem+json" || !strings.Contains(string(r.body), problem.TypeTooManyWatchers) {
		t.Fatalf("a watch beyond the cap = %d %v %s", r.status, r.header, r.body)
	}
	first.cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.api.URL+"/v1/leases/capped/watch", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		resp.Body.Close()
		cancel()
		if resp.StatusCode == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a watch after one ended = %d", resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
