package gateway_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/control"

	"github.com/fencegw/fencegw/wire"
)

// sse is a lease watch stream as a client reads it.
type sse struct {
	events chan sseEvent
	cancel context.CancelFunc
}

type sseEvent struct {
	id, kind string
	data     wire.LeaseEvent
	comment  bool
}

// watch opens GET /v1/leases/{name}/watch on g, with Last-Event-ID when
// last is set, and reads its events in the background.
func watch(t *testing.T, g *gw, name, last string) *sse {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.api.URL+"/v1/leases/"+name+"/watch", nil)
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		t.Fatalf("watch = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &sse{events: make(chan sseEvent, 64), cancel: cancel}
	t.Cleanup(cancel)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.kind != "" {
					s.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
				s.events <- sseEvent{comment: true}
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.kind = line[7:]
			case strings.HasPrefix(line, "data: "):
				if err := json.Unmarshal([]byte(line[6:]), &ev.data); err != nil {
					t.Errorf("event data %q: %v", line, err)
				}
			}
		}
	}()
	return s
}

// next returns the next event (comments skipped), failing after 15 s.
func (s *sse) next(t *testing.T) sseEvent {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case ev := <-s.events:
			if !ev.comment {
				return ev
			}
		case <-deadline:
			t.Fatal("no event in 15s")
		}
	}
}

// TestLeaseWatch: a watch through one replica sees, in order, a grant,
// a renewal and a release made through another, then a grant that lapses
// (expired soon after its expiry) and its lock-delay; a reconnect with
// Last-Event-ID does not repeat the state it names; a new one starts with
// the current state.
func TestLeaseWatch(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			gs := replicas(t, b, newUpstream(t), gatewayOptions{heartbeat: 200 * time.Millisecond}, 2, idemRoutes...)
			watcher, actor := gs[0], gs[1]
			w := watch(t, watcher, "job", "")
			time.Sleep(300 * time.Millisecond) // the subscription is in place
			a := leaseOf(t, actor.acquire(t, "job", "node-a", 15))
			expect := func(kind string, epoch int64) sseEvent {
				t.Helper()
				ev := w.next(t)
				if ev.kind != kind || ev.data.Event != kind || int64(ev.data.Epoch) != epoch || ev.data.Name != "job" || ev.id == "" {
					t.Fatalf("event = %+v, want %s at epoch %d", ev, kind, epoch)
				}
				return ev
			}
			expect(control.EventAcquired, int64(a.Epoch))
			leaseOf(t, actor.renewLease(t, "job", "node-a", int64(a.Epoch)))
			expect(control.EventRenewed, int64(a.Epoch))
			if r := actor.releaseLease(t, "job", "node-a", int64(a.Epoch)); r.status != http.StatusNoContent {
				t.Fatalf("release = %d", r.status)
			}
			expect(control.EventReleased, int64(a.Epoch))
			b2 := leaseOf(t, actor.leaseCall(t, "job", "acquire", `{"holder":"node-b","ttl_seconds":2,"lock_delay_seconds":1}`, nil))
			expect(control.EventAcquired, int64(b2.Epoch))
			exp := expect(control.EventExpired, int64(b2.Epoch))
			if late := exp.data.At.Sub(b2.ExpiresAt); late > 3*time.Second {
				t.Fatalf("expired %s after the expiry", late)
			} else {
				t.Logf("expired seen %s after the expiry the grant named", late.Round(time.Millisecond))
			}
			ld := expect(control.EventLockDelay, int64(b2.Epoch))
			if ld.data.LockDelayUntil == nil || ld.data.LockDelayUntil.Before(exp.data.ExpiresAt) {
				t.Fatalf("lock_delay event = %+v", ld.data)
			}
			w.cancel()

			// Reconnecting with the last id: no repeat, only heartbeats.
			again := watch(t, watcher, "job", ld.id)
			select {
			case ev := <-again.events:
				if !ev.comment {
					t.Fatalf("a resumed watch repeated %+v", ev)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no heartbeat")
			}
			// A new watch starts with the current state.
			fresh := watch(t, watcher, "job", "")
			if ev := fresh.next(t); ev.kind != control.EventExpired || ev.data.Epoch != b2.Epoch {
				t.Fatalf("a new watch started with %+v", ev)
			}
		})
	}
}

// TestLeaseWatchNeedsAKey: with API keys, a watch needs a key allowed the
// lease name, as the lease's other endpoints do.
func TestLeaseWatchNeedsAKey(t *testing.T) {
	keys := append(ownershipKeys(), control.APIKey{Name: "other", Hash: sha256.Sum256([]byte("secret-other")), Leases: []string{"payroll-*"}})
	g := newGatewayWith(t, boltFresh(t)(t), newUpstream(t), gatewayOptions{keys: keys})
	for secret, want := range map[string]int{"": http.StatusUnauthorized, "secret-other": http.StatusForbidden} {
		h := map[string]string{}
		if secret != "" {
			h = bearer(secret)
		}
		if r := do(t, http.MethodGet, g.api.URL+"/v1/leases/invoice-sweeper/watch", h, ""); r.status != want {
			t.Fatalf("watch with key %q = %d, want %d", secret, r.status, want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.api.URL+"/v1/leases/invoice-sweeper/watch", nil)
	req.Header.Set("Authorization", "Bearer secret-one")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch with an allowed key = %d", resp.StatusCode)
	}
}

// TestLeaseWatchResumeBeyondLatest: a Last-Event-ID above any id the store
// has for the lease (ids restart with a restored or new store) is a gap:
// the watch starts with the lease's current state, then sends every later
// change; whether the watch is the lease's first in the process or joins
// one already open.
func TestLeaseWatchResumeBeyondLatest(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			gs := replicas(t, b, newUpstream(t), gatewayOptions{heartbeat: 200 * time.Millisecond}, 2, idemRoutes...)
			watcher, actor := gs[0], gs[1]
			a := leaseOf(t, actor.acquire(t, "job", "node-a", 15))
			const beyond = "999999999999"
			first := watch(t, watcher, "job", beyond)
			expect := func(w *sse, kind string) {
				t.Helper()
				if ev := w.next(t); ev.kind != kind || ev.data.Epoch != a.Epoch {
					t.Fatalf("event = %+v, want %s at epoch %d", ev, kind, a.Epoch)
				}
			}
			expect(first, control.EventAcquired)
			joined := watch(t, watcher, "job", beyond+".2")
			expect(joined, control.EventAcquired)
			leaseOf(t, actor.renewLease(t, "job", "node-a", int64(a.Epoch)))
			expect(first, control.EventRenewed)
			expect(joined, control.EventRenewed)
		})
	}
}
