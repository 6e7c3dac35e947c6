package gateway_test

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/control"
	"github.com/fencegw/fencegw/gateway/problem"
)

// TestLeaseQuotaPerKey: a key with max_leases 2 gets its third live lease
// refused with 429 problem+json and Retry-After; re-acquiring one of its
// own live leases is not a new one; a release frees a slot; another key is
// not counted against it.
func TestLeaseQuotaPerKey(t *testing.T) {
	g := newGatewayWith(t, boltFresh(t)(t), newUpstream(t), gatewayOptions{keys: control.APIKeys{
		{Name: "team-a", Hash: sha256.Sum256([]byte("key-a")), Leases: []string{"team-a-*"}, MaxLeases: 2},
		{Name: "team-b", Hash: sha256.Sum256([]byte("key-b")), Leases: []string{"team-b-*"}},
	}})
	a := map[string]string{"Authorization": "Bearer key-a"}
	b := map[string]string{"Authorization": "Bearer key-b"}
	acquire := func(h map[string]string, name string) answer {
		return do(t, "POST", g.api.URL+"/v1/leases/"+name+"/acquire", h, `{"holder":"h","ttl_seconds":60}`)
	}
	for _, n := range []string{"team-a-1", "team-a-2"} {
		if r := acquire(a, n); r.status != 200 {
			t.Fatalf("acquire %s: %d %s", n, r.status, r.body)
		}
	}
	r := acquire(a, "team-a-3")
	mustBeQuota(t, r)
	if r := acquire(a, "team-a-1"); r.status != 200 {
		t.Fatalf("re-acquire of a live lease at the cap: %d %s, want 200", r.status, r.body)
	}
	if r := acquire(b, "team-b-1"); r.status != 200 {
		t.Fatalf("another key at team-a's cap: %d %s, want 200", r.status, r.body)
	}
	release(t, g, a, "team-a-2")
	if r := acquire(a, "team-a-3"); r.status != 200 {
		t.Fatalf("acquire after a release freed a slot: %d %s, want 200", r.status, r.body)
	}
	mustBeQuota(t, acquire(a, "team-a-4"))
}

// TestLeaseQuotaGlobal: leases.max_live caps every caller's live leases
// together, anonymous ones included; a release frees a slot.
func TestLeaseQuotaGlobal(t *testing.T) {
	g := newGatewayWith(t, boltFresh(t)(t), newUpstream(t), gatewayOptions{maxLive: 3})
	for i := range 3 {
		if r := do(t, "POST", fmt.Sprintf("%s/v1/leases/l-%d/acquire", g.api.URL, i), nil, `{"holder":"h","ttl_seconds":60}`); r.status != 200 {
			t.Fatalf("acquire %d: %d %s", i, r.status, r.body)
		}
	}
	mustBeQuota(t, do(t, "POST", g.api.URL+"/v1/leases/l-3/acquire", nil, `{"holder":"h","ttl_seconds":60}`))
	release(t, g, nil, "l-0")
	if r := do(t, "POST", g.api.URL+"/v1/leases/l-3/acquire", nil, `{"holder":"h","ttl_seconds":60}`); r.status != 200 {
		t.Fatalf("acquire after a release: %d %s, want 200", r.status, r.body)
	}
}

func mustBeQuota(t *testing.T, r answer) {
	t.Helper()
	if r.status != 429 {
		t.Fatalf("acquire beyond the cap: %d %s, want 429", r.status, r.body)
	}
	if p := r.problem(t); p["type"] != problem.TypeLeaseQuota {
		t.Fatalf("problem type %v, want %s", p["type"], problem.TypeLeaseQuota)
	}
	if r.header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
}

// release releases name held by "h" at the epoch it has now.
func release(t *testing.T, g *gw, h map[string]string, name string) {
	t.Helper()
	l, err := g.fence.Lease(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if r := do(t, "POST", g.api.URL+"/v1/leases/"+name+"/release", h, fmt.Sprintf(`{"holder":"h","epoch":%d}`, l.Epoch)); r.status != 200 && r.status != 204 {
		t.Fatalf("release %s: %d %s", name, r.status, r.body)
	}
}

// TestLeaseQuotaConcurrent: concurrent acquires through one replica never
// overshoot the cap: of 20 at once under a cap of 5, exactly 5 succeed.
func TestLeaseQuotaConcurrent(t *testing.T) {
	g := newGatewayWith(t, boltFresh(t)(t), newUpstream(t), gatewayOptions{maxLive: 5})
	statuses := make(chan int, 20)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			r := do(t, "POST", fmt.Sprintf("%s/v1/leases/c-%d/acquire", g.api.URL, i), nil, `{"holder":"h","ttl_seconds":60}`)
			statuses <- r.status
		})
	}
	wg.Wait()
	close(statuses)
	n := map[int]int{}
	for s := range statuses {
		n[s]++
	}
	if n[200] != 5 || n[429] != 15 {
		t.Fatalf("20 concurrent acquires under a cap of 5: %v, want 5 × 200 and 15 × 429", n)
	}
}

// TestLeaseQuotaAcrossReplicas: on a shared store the cap counts every
// replica's leases. Each replica may overshoot by what the others granted
// since it last read the count (at most a second ago); once it reads again,
// it refuses.
func TestLeaseQuotaAcrossReplicas(t *testing.T) {
	for _, b := range backends()[1:] { // the shared stores
		t.Run(b.name, func(t *testing.T) {
			f := b.fresh(t)
			up := newUpstream(t)
			r1 := newGatewayWith(t, f(t), up, gatewayOptions{maxLive: 2})
			r2 := newGatewayWith(t, f(t), up, gatewayOptions{maxLive: 2})
			acquire := func(g *gw, name string) answer {
				return do(t, "POST", g.api.URL+"/v1/leases/"+name+"/acquire", nil, `{"holder":"h","ttl_seconds":60}`)
			}
			for i, g := range []*gw{r1, r2} {
				if r := acquire(g, fmt.Sprintf("x-%d", i)); r.status != 200 {
					t.Fatalf("acquire through replica %d: %d %s", i+1, r.status, r.body)
				}
			}
			time.Sleep(control.DefaultQuotaPeriod + 100*time.Millisecond)
			mustBeQuota(t, acquire(r1, "x-2"))
			mustBeQuota(t, acquire(r2, "x-2"))
		})
	}
}
