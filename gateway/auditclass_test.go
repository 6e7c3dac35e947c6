package gateway_test

import (
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// junkFlood sends n writes without a token to n distinct resources
// (/tenant/<i>) through g from 8 clients, closes half once half of them
// were answered, and counts those not answered 428.
func junkFlood(g *gw, n int, half chan<- struct{}) int64 {
	var sent atomic.Int64
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer client.CloseIdleConnections()
	return sendAll(n, http.StatusPreconditionRequired, func(i int) (*http.Response, error) {
		resp, err := client.Post(g.proxy.URL+fmt.Sprintf("/tenant/%d/x", i), "text/plain", nil)
		if sent.Add(1) == int64(n/2) {
			close(half)
		}
		return resp, err
	})
}

// sendAll calls send(i) for every i from 0 to n-1, from 8 goroutines at
// once, and counts the calls that failed or were not answered want.
func sendAll(n, want int, send func(i int) (*http.Response, error)) int64 {
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for c := range 8 {
		wg.Go(func() {
			for i := c; i < n; i += 8 {
				resp, err := send(i)
				if err != nil {
					wrong.Add(1)
					continue
				}
				resp.Body.Close()
				if resp.StatusCode != want {
					wrong.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return wrong.Load()
}

// TestAuditJunkFloodKeepsHistory: on every store, with max_pending 1000, a
// flood of 20,000 writes without a token to distinct resources, made while
// the audit is not flushed, neither drops the one stale-epoch refusal nor
// the one lease grant made during it; the flood is kept as a count per
// route and reason, without its 20,000 names.
func TestAuditJunkFloodKeepsHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("slow (a flood of 20000 requests); run by the full suite")
	}
	const flood = 20000
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			routes := append([]routeSpec{{prefix: "/tenant/", resource: "tenant-{segment:1}"}}, leaseRoutes...)
			store := b.fresh(t)(t)
			g := newGatewayWith(t, store, newUpstream(t), gatewayOptions{auditFlush: time.Minute,
				auditInterval: time.Hour, auditMaxPending: 1000}, routes...)
			if w := g.write(t, "/raw/x", "2"); w.status != http.StatusCreated {
				t.Fatalf("write at epoch 2: %d %s", w.status, w.body)
			}
			done, half := make(chan int64), make(chan struct{})
			go func() { done <- junkFlood(g, flood, half) }()
			<-half
			if w := g.write(t, "/raw/x", "1"); w.status != http.StatusPreconditionFailed {
				t.Fatalf("stale write: %d %s", w.status, w.body)
			}
			grant := leaseOf(t, g.acquire(t, "report-builder", "node-a", 30))
			if wrong := <-done; wrong > 0 {
				t.Fatalf("%d of %d writes without a token were not answered 428", wrong, flood)
			}
			g.flushAudit(t)

			if _, count := staleCount(t, g); count != 1 {
				t.Fatalf("stale refusals counted: %d, want 1", count)
			}
			events := g.leaseHistoryOf(t, url.Values{"name": {"report-builder"}, "event": {"acquired"}}).Events
			if len(events) != 1 || events[0].Epoch != grant.Epoch {
				t.Fatalf("the grant during the flood: %+v", events)
			}
			var junk int64
			entries := 0
			for _, r := range g.rejectionsOf(t, url.Values{"decision": {"missing"}, "limit": {"1000"}}).Rejections {
				entries++
				junk += r.Count
				if r.Resource != "" || r.Route == "" || r.Status != http.StatusPreconditionRequired {
					t.Fatalf("a junk entry keeps a name or lacks its route and reason: %+v", r)
				}
			}
			if entries < 1 || entries > 2 || junk != flood {
				t.Fatalf("the flood is %d entries counting %d; want 1 or 2 counting %d", entries, junk, flood)
			}
			if es, err := store.ListAudit(t.Context(), tokens.AuditQuery{Stream: tokens.AuditJunk, Limit: 10}); err != nil || len(es) != entries {
				t.Fatalf("the junk log holds %d entries (%v), want %d", len(es), err, entries)
			}
		})
	}
}
