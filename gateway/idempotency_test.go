package gateway_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/idempotency"
	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/policy"
)

var idemRoutes = []routeSpec{
	{prefix: "/bound/", tokens: policy.TokensSigned, resource: "invoice-sweeper"},
	{prefix: "/raw/", resource: "invoice-sweeper", rawOnLeased: true}, // trusts its clients
	{prefix: "/strict/", resource: "strict", idempotency: "required"},
	{prefix: "/plain/", resource: "plain", idempotency: "off"},
}

// keyed sends a fenced write with an Idempotency-Key (none when key is
// empty).
func keyed(t *testing.T, g *gw, path, token, key, body string) answer {
	t.Helper()
	h := map[string]string{gateway.TokenHeader: token}
	if key != "" {
		h[idempotency.KeyHeader] = key
	}
	return do(t, http.MethodPost, g.proxy.URL+path, h, body)
}

// forwards counts the writes the upstream received with Idempotency-Key k.
func (u *testUpstream) forwards(k string) int {
	n := 0
	for _, r := range u.requests() {
		if r.Header.Get(idempotency.KeyHeader) == k {
			n++
		}
	}
	return n
}

// replicas opens n gateways over one state of the backend's store: n
// clients of a shared store, or one gateway for the embedded store.
func replicas(t *testing.T, b backend, up *testUpstream, o gatewayOptions, n int, specs ...routeSpec) []*gw {
	f := b.fresh(t)
	first := newGatewayWith(t, f(t), up, o, specs...)
	gs := []*gw{first}
	if b.name == "embedded" {
		for len(gs) < n {
			gs = append(gs, first)
		}
		return gs
	}
	o.auth = first.auth // one token authority, as replicas sharing a store have
	for len(gs) < n {
		gs = append(gs, newGatewayWith(t, f(t), up, o, specs...))
	}
	return gs
}

// TestIdempotencyAcrossReplicasAndEpochs: the first write with a key is
// forwarded once; its retry through another replica, by the leader that
// took over at a newer epoch, gets the stored answer byte for byte with
// Idempotent-Replayed and is not forwarded; the fence comes first; another
// request with the key is 422; a required key is 400 when missing.
func TestIdempotencyAcrossReplicasAndEpochs(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			up := newUpstream(t)
			gs := replicas(t, b, up, gatewayOptions{}, 2, idemRoutes...)
			g1, g2 := gs[0], gs[1]
			a := leaseOf(t, g1.acquire(t, "invoice-sweeper", "node-a", 15))
			first := keyed(t, g1, "/bound/send", a.Token, `"invoice-1001"`, "send invoice 1001")
			if first.status != http.StatusCreated || first.header.Get(idempotency.IdempotentReplayedHeader) != "" {
				t.Fatalf("first write = %d %s", first.status, first.body)
			}
			if n := up.forwards(`"invoice-1001"`); n != 1 {
				t.Fatalf("the upstream got the key %d times, want once (and the header with it)", n)
			}
			// node-a dies after sending; node-b takes over and repeats the work.
			if r := g1.releaseLease(t, "invoice-sweeper", "node-a", int64(a.Epoch)); r.status != http.StatusNoContent {
				t.Fatalf("release = %d", r.status)
			}
			bl := leaseOf(t, g2.acquire(t, "invoice-sweeper", "node-b", 15))
			again := keyed(t, g2, "/bound/send", bl.Token, `"invoice-1001"`, "send invoice 1001")
			if again.status != first.status || !bytes.Equal(again.body, first.body) ||
				again.header.Get(idempotency.IdempotentReplayedHeader) != "true" || again.header.Get("X-Upstream") != "yes" {
				t.Fatalf("retry at epoch %d through another replica = %d %q %v; want %d %q replayed", bl.Epoch,
					again.status, again.body, again.header, first.status, first.body)
			}
			if n := up.forwards(`"invoice-1001"`); n != 1 {
				t.Fatalf("the upstream got the key %d times after the retry, want once", n)
			}
			// The fence first: node-a's stale token is 412 whatever its key.
			if r := keyed(t, g1, "/bound/send", a.Token, `"invoice-1001"`, "send invoice 1001"); r.status != http.StatusPreconditionFailed {
				t.Fatalf("stale write with a used key = %d %s", r.status, r.body)
			}
			// The key with another request: 422; a raw route shares the
			// resource's keys (a bare key is the same key).
			r := keyed(t, g2, "/bound/send", bl.Token, "invoice-1001", "send invoice 1002")
			if p := r.problem(t); r.status != http.StatusUnprocessableEntity || p["type"] != problem.TypeIdemKeyReused {
				t.Fatalf("key reused for another body = %d %v", r.status, p)
			}
			epoch := strconv.FormatInt(int64(bl.Epoch), 10)
			if r := keyed(t, g1, "/raw/send", epoch, "invoice-1001", "send invoice 1001"); r.status != http.StatusUnprocessableEntity {
				t.Fatalf("the key on another path of the resource = %d %s, want 422 (the path is part of the request)", r.status, r.body)
			}
			// Required: no key is 400; a malformed one too; off: no record.
			r = keyed(t, g1, "/strict/send", "1", "", "x")
			if p := r.problem(t); r.status != http.StatusBadRequest || p["type"] != problem.TypeIdemKeyBad {
				t.Fatalf("no key on a required route = %d %v", r.status, p)
			}
			for _, k := range []string{`"open`, "a b,c", `"\u00e9"`} {
				if r := keyed(t, g1, "/strict/send", "1", k, "x"); r.status != http.StatusBadRequest {
					t.Fatalf("key %q = %d %s", k, r.status, r.body)
				}
			}
			for i := 0; i < 2; i++ {
				if r := keyed(t, g1, "/plain/send", "1", "k", "x"); r.status != http.StatusCreated {
					t.Fatalf("write %d on an idempotency: off route = %d", i, r.status)
				}
			}
			if n := up.forwards("k"); n != 2 {
				t.Fatalf("idempotency: off forwarded the key %d times, want every time (2)", n)
			}
		})
	}
}

// TestIdempotencyInFlightAndUnknown: a retry while the first write is at
// the upstream gets 409 with Retry-After; a write that timed out at the
// upstream has an unknown outcome, and its retries get 409 and are never
// forwarded; a write refused before forwarding frees its key.
func TestIdempotencyInFlightAndUnknown(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			up := newUpstream(t)
			gs := replicas(t, b, up, gatewayOptions{upstreamTimeout: time.Second}, 2, idemRoutes...)
			up.mu.Lock()
			up.delay = 1500 * time.Millisecond // past the exchange deadline
			up.mu.Unlock()
			slow := make(chan answer, 1)
			go func() { slow <- keyed(t, gs[0], "/raw/x", "1", "slow", "body") }()
			deadline := time.Now().Add(10 * time.Second)
			for up.forwards("slow") == 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			r := keyed(t, gs[1], "/raw/x", "1", "slow", "body")
			if p := r.problem(t); r.status != http.StatusConflict || p["type"] != problem.TypeIdemInFlight || r.header.Get("Retry-After") == "" {
				t.Fatalf("retry while in flight = %d %v (Retry-After %q)", r.status, p, r.header.Get("Retry-After"))
			}
			if first := <-slow; first.status != http.StatusGatewayTimeout {
				t.Fatalf("the slow write = %d %s, want 504", first.status, first.body)
			}
			up.mu.Lock()
			up.delay = 0
			up.mu.Unlock()
			for _, g := range gs {
				r := keyed(t, g, "/raw/x", "1", "slow", "body")
				if p := r.problem(t); r.status != http.StatusConflict || p["type"] != problem.TypeIdemNotReplayable {
					t.Fatalf("retry after an unknown outcome = %d %v", r.status, p)
				}
			}
			if n := up.forwards("slow"); n != 1 {
				t.Fatalf("a write of unknown outcome was forwarded %d times, want once", n)
			}
			// An answer longer than idempotency.max_answer_bytes streams to
			// the client and is not kept: retries are 409, not forwarded.
			big := strings.Repeat("x", 70<<10)
			if r := keyed(t, gs[0], "/raw/x", "1", "big", big); r.status != http.StatusCreated || len(r.body) != len("stored:")+len(big) {
				t.Fatalf("a write with a long answer = %d, %d bytes", r.status, len(r.body))
			}
			if r := keyed(t, gs[1], "/raw/x", "1", "big", big); r.status != http.StatusConflict || r.problem(t)["type"] != problem.TypeIdemNotReplayable {
				t.Fatalf("retry of a write whose answer was not kept = %d %s", r.status, r.body)
			}
			if n := up.forwards("big"); n != 1 {
				t.Fatalf("forwarded %d times", n)
			}
			// Refused after admission, nothing forwarded: the key is free.
			// (A stale epoch is refused before the key is looked at.)
			if r := keyed(t, gs[0], "/raw/x", "5", "fresh", "body"); r.status != http.StatusCreated {
				t.Fatalf("write at 5 = %d", r.status)
			}
			if r := keyed(t, gs[0], "/raw/x", "1", "free", "body"); r.status != http.StatusPreconditionFailed {
				t.Fatalf("stale write = %d", r.status)
			}
			if r := keyed(t, gs[1], "/raw/x", "5", "free", "body"); r.status != http.StatusCreated {
				t.Fatalf("the key of a refused write, used again = %d %s", r.status, r.body)
			}
		})
	}
}

// TestIdempotencyConcurrentAcrossReplicas: 50 concurrent writes with one
// key through three replicas are forwarded exactly once; the others are
// replays of its answer or 409 while it is in flight.
func TestIdempotencyConcurrentAcrossReplicas(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			up := newUpstream(t)
			up.delay = 50 * time.Millisecond
			gs := replicas(t, b, up, gatewayOptions{}, 3, idemRoutes...)
			var wg sync.WaitGroup
			var mu sync.Mutex
			counts := map[string]int{}
			for i := 0; i < 50; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := keyed(t, gs[i%3], "/raw/x", "1", "once", "body")
					kind := strconv.Itoa(r.status)
					if r.header.Get(idempotency.IdempotentReplayedHeader) == "true" {
						kind += " replayed"
					}
					mu.Lock()
					counts[kind]++
					mu.Unlock()
				}()
			}
			wg.Wait()
			if n := up.forwards("once"); n != 1 {
				t.Fatalf("50 concurrent writes with one key through 3 replicas were forwarded %d times (answers %v)", n, counts)
			}
			if counts["201"] != 1 || counts["201"]+counts["201 replayed"]+counts["409"] != 50 {
				t.Fatalf("answers %v: want one 201, the rest replays or 409", counts)
			}
			t.Logf("answers: %v", counts)
		})
	}
}

// TestIdempotencyMetrics: every keyed write's outcome is counted by route
// and outcome, and named on its span.
func TestIdempotencyMetrics(t *testing.T) {
	o := newObserved(t)
	up := newUpstream(t)
	g := newGatewayWith(t, boltFresh(t)(t), up, gatewayOptions{observed: o}, idemRoutes...)
	h, traceID := traceparent(1)
	r := do(t, http.MethodPost, g.proxy.URL+"/raw/x", map[string]string{gateway.TokenHeader: "1",
		idempotency.KeyHeader: "k", "traceparent": h}, "a")
	if r.status != http.StatusCreated {
		t.Fatalf("first = %d", r.status)
	}
	keyed(t, g, "/raw/x", "1", "k", "a")    // replayed
	keyed(t, g, "/raw/x", "1", "k", "b")    // mismatch
	keyed(t, g, "/strict/x", "1", "", "a")  // missing
	keyed(t, g, "/strict/x", "1", `"`, "a") // invalid
	if v := attrs(o.serverSpan(t, traceID))["fencing.idempotency"]; v.AsString() != "forwarded" {
		t.Fatalf("span attribute fencing.idempotency = %q, want forwarded", v.AsString())
	}
	counts := o.counts(t, "fencegw.idempotency", "outcome")
	want := map[string]int64{"forwarded": 1, "replayed": 1, "mismatch": 1, "missing": 1, "invalid": 1}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("idempotency outcomes = %v, want %v", counts, want)
	}
}

// TestForgetIdempotencyKey: an admin key deletes the record of a write of
// unknown outcome, and the next write with the key is forwarded; other
// keys may not, and a key with no record is 404.
func TestForgetIdempotencyKey(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			up := newUpstream(t)
			g := newGatewayWith(t, b.fresh(t)(t), up, gatewayOptions{upstreamTimeout: 500 * time.Millisecond, keys: ownershipKeys()}, idemRoutes...)
			up.mu.Lock()
			up.delay = time.Second
			up.mu.Unlock()
			if r := keyed(t, g, "/raw/x", "1", "mail/7", "body"); r.status != http.StatusGatewayTimeout {
				t.Fatalf("slow write = %d", r.status)
			}
			up.mu.Lock()
			up.delay = 0
			up.mu.Unlock()
			if r := keyed(t, g, "/raw/x", "1", "mail/7", "body"); r.status != http.StatusConflict {
				t.Fatalf("retry of an unknown outcome = %d", r.status)
			}
			forget := func(secret string) int {
				return do(t, http.MethodDelete, g.api.URL+"/v1/idempotency/invoice-sweeper/mail%2F7", bearer(secret), "").status
			}
			if s := forget("secret-one"); s != http.StatusForbidden {
				t.Fatalf("forget with a lease key = %d, want 403", s)
			}
			if s := forget("secret-ops"); s != http.StatusNoContent {
				t.Fatalf("forget with the admin key = %d, want 204", s)
			}
			if s := forget("secret-ops"); s != http.StatusNotFound {
				t.Fatalf("forget again = %d, want 404", s)
			}
			if r := keyed(t, g, "/raw/x", "1", "mail/7", "body"); r.status != http.StatusCreated {
				t.Fatalf("write after the record was forgotten = %d %s", r.status, r.body)
			}
			if n := up.forwards("mail/7"); n != 2 {
				t.Fatalf("forwarded %d times, want twice (once more after the operator's decision)", n)
			}
		})
	}
}
