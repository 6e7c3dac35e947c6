package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/fencegw/fencegw/wire"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/testutil/teststore"
	"github.com/fencegw/fencegw/tokens"
)

// rejectionsOf lists the audit of refusals through g with query q.
func (g *gw) rejectionsOf(t *testing.T, q url.Values) wire.Rejections {
	t.Helper()
	return getAudit[wire.Rejections](t, g, "/v1/audit/rejections", q)
}

// leaseHistoryOf lists the lease history through g with query q.
func (g *gw) leaseHistoryOf(t *testing.T, q url.Values) wire.LeaseHistory {
	t.Helper()
	return getAudit[wire.LeaseHistory](t, g, "/v1/audit/leases", q)
}

// getAudit reads one page of an audit endpoint through g.
func getAudit[T any](t *testing.T, g *gw, path string, q url.Values) T {
	t.Helper()
	a := do(t, http.MethodGet, g.api.URL+path+"?"+q.Encode(), nil, "")
	var out T
	if a.status != http.StatusOK || json.Unmarshal(a.body, &out) != nil {
		t.Fatalf("GET %s?%s = %d %s", path, q.Encode(), a.status, a.body)
	}
	return out
}

// closeGateway stops g and closes its store: a clean shutdown.
func closeGateway(g *gw, store tokens.Store) {
	g.proxy.Close()
	g.api.Close()
	g.server.Close()
	store.Close()
}

// TestAuditAcrossReplicasAndRestarts: on every store, a takeover after a
// lapse and a stale write through replica A are listed, with the replica
// that decided, by replica B; a refusal left in memory is written at a
// clean shutdown; after a restart of every replica the audit is whole.
func TestAuditAcrossReplicasAndRestarts(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			up := newUpstream(t)
			f := b.fresh(t)
			storeA := f(t)
			a := newGatewayWith(t, storeA, up, gatewayOptions{replica: "gw-a", auditFlush: time.Minute}, leaseRoutes...)
			bee, storeB := a, storeA
			if b.name != "embedded" {
				storeB = f(t)
				bee = newGatewayWith(t, storeB, up, gatewayOptions{replica: "gw-b", auditFlush: time.Minute, auth: a.auth}, leaseRoutes...)
			}

			first := leaseOf(t, a.acquire(t, "invoice-sweeper", "node-a", 2))
			if r := bee.renewLease(t, "invoice-sweeper", "node-a", int64(first.Epoch)); r.status != http.StatusOK {
				t.Fatalf("renew: %d %s", r.status, r.body)
			}
			a.awaitLapse(t, "invoice-sweeper")
			second := leaseOf(t, bee.acquire(t, "invoice-sweeper", "node-b", 30))
			if w := a.write(t, "/raw/x", "1"); w.status != http.StatusPreconditionFailed {
				t.Fatalf("stale write: %d %s", w.status, w.body)
			}
			a.flushAudit(t)
			bee.flushAudit(t)

			check := func(g *gw) {
				t.Helper()
				rej := g.rejectionsOf(t, url.Values{"resource": {"invoice-sweeper"}, "decision": {"stale"}}).Rejections
				if len(rej) != 1 || rej[0].Replica != "gw-a" || rej[0].Count != 1 || rej[0].Decision != string(tokens.DecisionStale) ||
					*rej[0].PresentedEpoch != first.Epoch || *rej[0].CurrentEpoch != second.Epoch || rej[0].Status != 412 {
					t.Fatalf("refusals listed: %+v", rej)
				}
				events := map[string]wire.LeaseRecord{}
				for _, e := range g.leaseHistoryOf(t, url.Values{"name": {"invoice-sweeper"}}).Events {
					events[e.Event+"/"+e.Holder] = e
				}
				wantB := "gw-b"
				if b.name == "embedded" {
					wantB = "gw-a"
				}
				acqA, renA, exp, acqB := events["acquired/node-a"], events["renewed/node-a"], events["expired/node-a"], events["acquired/node-b"]
				switch {
				case len(events) != 4,
					acqA.Epoch != first.Epoch || acqA.Replica != "gw-a" || acqA.ExpiresAt == nil,
					renA.Count != 1 || renA.Replica != wantB,
					exp.Epoch != first.Epoch || exp.First.After(acqB.First),
					acqB.Epoch != second.Epoch || acqB.Replica != wantB || acqB.PreviousHolder != "node-a" ||
						acqB.PreviousEpoch == nil || *acqB.PreviousEpoch != first.Epoch:
					t.Fatalf("lease history: %+v", events)
				}
			}
			check(bee)

			// A refusal not yet written is written when its replica
			// stops cleanly.
			if w := bee.write(t, "/raw/x", ""); w.status != http.StatusPreconditionRequired {
				t.Fatalf("write without a token: %d", w.status)
			}
			if bee != a {
				closeGateway(bee, storeB)
			}
			closeGateway(a, storeA)
			again := newGatewayWith(t, f(t), up, gatewayOptions{replica: "gw-c"}, leaseRoutes...)
			rej := again.rejectionsOf(t, url.Values{"decision": {"missing"}}).Rejections
			if len(rej) != 1 || rej[0].Count != 1 || rej[0].Replica != bee2name(b.name) {
				t.Fatalf("after a restart, the refusal written at shutdown: %+v", rej)
			}
			check(again)
		})
	}
}

// bee2name is the replica name of the second gateway of
// TestAuditAcrossReplicasAndRestarts (the first, on the embedded store).
func bee2name(backend string) string {
	if backend == "embedded" {
		return "gw-a"
	}
	return "gw-b"
}

// staleStorm sends n stale raw writes (epoch 1, the HWM being 2) through g
// from 8 clients at once.
func staleStorm(t *testing.T, g *gw, n int) {
	t.Helper()
	wrong := sendAll(n, http.StatusPreconditionFailed, func(int) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, g.proxy.URL+"/raw/x", nil)
		req.Header.Set(gateway.TokenHeader, "1")
		return http.DefaultClient.Do(req)
	})
	if wrong > 0 {
		t.Fatalf("%d of %d stale writes were not answered 412", wrong, n)
	}
}

// staleCount sums the counts of the stale refusals g lists.
func staleCount(t *testing.T, g *gw) (entries int, count int64) {
	t.Helper()
	for _, r := range g.rejectionsOf(t, url.Values{"decision": {"stale"}, "limit": {"1000"}}).Rejections {
		entries++
		count += r.Count
	}
	return entries, count
}

// TestAuditStormIsAggregated: on every store, a storm of 2,000 identical
// stale writes is one entry (two if it straddles an interval's end: the
// interval is an hour here, so that a slow machine's storm fits) with the
// full count, written in one store call.
func TestAuditStormIsAggregated(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			store := &teststore.AuditCounter{Store: b.fresh(t)(t)}
			g := newGatewayWith(t, store, newUpstream(t), gatewayOptions{auditFlush: time.Minute, auditInterval: time.Hour}, leaseRoutes...)
			if w := g.write(t, "/raw/x", "2"); w.status != http.StatusCreated {
				t.Fatalf("write at epoch 2: %d %s", w.status, w.body)
			}
			staleStorm(t, g, 2000)
			g.flushAudit(t)
			if entries, count := staleCount(t, g); entries < 1 || entries > 2 || count != 2000 {
				t.Fatalf("the storm is %d entries counting %d refusals; want 1 or 2 counting 2000", entries, count)
			}
			if puts, entries := store.Puts.Load(), store.Entries.Load(); puts != 1 || entries > 2 {
				t.Fatalf("the storm cost %d audit writes of %d entries; want 1 of at most 2", puts, entries)
			}
		})
	}
}

// TestAuditWaitsOutAStoreOutage: refusals made while the store cannot be
// written are counted in memory, and written once it is back: through a
// real outage of PostgreSQL and etcd (the stale writes are refused from
// memory meanwhile), and through refused audit writes on every store.
func TestAuditWaitsOutAStoreOutage(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			f, stop, restart := b.fresh(t), func() {}, func() {}
			if b.outage != nil {
				f, stop, restart = b.outage(t)
			}
			store := &teststore.AuditCounter{Store: f(t)}
			g := newGatewayWith(t, store, newUpstream(t), gatewayOptions{auditFlush: time.Minute}, leaseRoutes...)
			if w := g.write(t, "/raw/x", "2"); w.status != http.StatusCreated {
				t.Fatalf("write at epoch 2: %d %s", w.status, w.body)
			}
			stop()
			store.Down.Store(true)
			staleStorm(t, g, 300)
			if err := g.server.FlushAudit(context.Background()); err == nil {
				t.Fatal("flushing the audit while the store is down succeeded")
			}
			staleStorm(t, g, 200)
			restart()
			store.Down.Store(false)
			deadline := time.Now().Add(30 * time.Second)
			for g.server.FlushAudit(context.Background()) != nil {
				if time.Now().After(deadline) {
					t.Fatal("the audit was not written 30s after the store came back")
				}
				time.Sleep(100 * time.Millisecond)
			}
			if _, count := staleCount(t, g); count != 500 {
				t.Fatalf("after the outage the audit counts %d stale writes, want 500", count)
			}
		})
	}
}
