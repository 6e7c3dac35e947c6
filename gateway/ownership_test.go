package gateway_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"testing"

	"github.com/fencegw/fencegw/gateway/control"
	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/fencegw/fencegw/policy"
)

// ownershipKeys are two keys allowed the same leases and an admin key.
func ownershipKeys() control.APIKeys {
	key := func(name, secret string, admin bool, leases ...string) control.APIKey {
		return control.APIKey{Name: name, Hash: sha256.Sum256([]byte(secret)), Leases: leases, Admin: admin}
	}
	return control.APIKeys{
		key("key-one", "secret-one", false, "invoice-*"),
		key("key-two", "secret-two", false, "invoice-*"),
		key("ops", "secret-ops", true),
	}
}

func bearer(secret string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + secret}
}

// keyCall is one lease call with an API key.
func (g *gw) keyCall(t *testing.T, secret, name, op, body string) answer {
	t.Helper()
	return g.leaseCall(t, name, op, body, bearer(secret))
}

// TestLeaseOwnership: with API keys, a grant belongs to the key that
// acquired it, on every store and through every replica: another key
// allowed the same name can read it but not renew, release or re-acquire
// it (403 lease-owned, no token), an admin key can, and a free lease is any
// allowed key's to take over.
func TestLeaseOwnership(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			f := b.fresh(t)
			up := newUpstream(t)
			opts := gatewayOptions{keys: ownershipKeys()}
			g1 := newGatewayWith(t, f(t), up, opts, leaseRoutes...)
			g2 := g1 // one process owns the embedded store
			if b.name != "embedded" {
				opts.auth = g1.auth
				g2 = newGatewayWith(t, f(t), up, opts, leaseRoutes...)
			}
			const name = "invoice-sweeper"
			acquire := func(holder string) string { return fmt.Sprintf(`{"holder":%q,"ttl_seconds":30}`, holder) }
			held := func(epoch int64) string { return fmt.Sprintf(`{"holder":"node-a","epoch":%d}`, epoch) }
			owned := func(t *testing.T, a answer, owner string) {
				t.Helper()
				if a.status != http.StatusForbidden {
					t.Fatalf("got %d %s, want 403 lease-owned", a.status, a.body)
				}
				p := a.problem(t)
				if p["type"] != problem.TypeLeaseOwned || p["owner"] != owner || p["lease"] != name || p["token"] != nil {
					t.Fatalf("403 problem = %v, want lease-owned by %q", p, owner)
				}
				if bytes.Contains(a.body, []byte(`"token`)) || a.header.Get("Retry-After") != "" {
					t.Fatalf("403 carries a token or Retry-After: %s", a.body)
				}
			}

			one := leaseOf(t, g1.keyCall(t, "secret-one", name, "acquire", acquire("node-a")))
			if one.Owner != "key-one" || one.Token == "" {
				t.Fatalf("key one's grant = %+v", one)
			}
			// Key two sees the lease, its owner included, and no token.
			got := leaseOf(t, do(t, "GET", g2.api.URL+"/v1/leases/"+name, bearer("secret-two"), ""))
			if got.Owner != "key-one" || got.Epoch != one.Epoch || got.Holder != "node-a" || got.Token != "" {
				t.Fatalf("GET by key two = %+v", got)
			}
			// Knowing the epoch does not make key two the holder.
			owned(t, g2.keyCall(t, "secret-two", name, "renew", held(int64(one.Epoch))), "key-one")
			owned(t, g2.keyCall(t, "secret-two", name, "release", held(int64(one.Epoch))), "key-one")
			owned(t, g2.keyCall(t, "secret-two", name, "acquire", acquire("node-a")), "key-one")
			if a := g2.keyCall(t, "secret-two", name, "acquire", acquire("node-b")); a.status != http.StatusConflict ||
				a.problem(t)["type"] != problem.TypeLeaseHeld {
				t.Fatalf("key two's acquire for another holder = %d %s, want 409 lease-held", a.status, a.body)
			}
			if a := g2.keyCall(t, "secret-two", name, "renew", held(int64(one.Epoch)+1)); a.status != http.StatusConflict ||
				a.problem(t)["type"] != problem.TypeLeaseLost {
				t.Fatalf("key two's renew of another epoch = %d %s, want 409 lease-lost", a.status, a.body)
			}
			// Key one, on either replica, renews as often as it likes.
			for _, g := range []*gw{g2, g1, g2} {
				rn := leaseOf(t, g.keyCall(t, "secret-one", name, "renew", held(int64(one.Epoch))))
				if rn.Epoch != one.Epoch || rn.Owner != "key-one" || rn.Token == "" {
					t.Fatalf("key one's renew = %+v", rn)
				}
			}
			if e := g2.fenceEpochWith(t, bearer("secret-ops"), name); e != int64(one.Epoch) {
				t.Fatalf("fence = %d after refused calls, want %d", e, one.Epoch)
			}
			// An admin renews without taking the grant, and may re-grant it.
			if rn := leaseOf(t, g2.keyCall(t, "secret-ops", name, "renew", held(int64(one.Epoch)))); rn.Owner != "key-one" {
				t.Fatalf("admin's renew = %+v, want the owner kept", rn)
			}
			ops := leaseOf(t, g2.keyCall(t, "secret-ops", name, "acquire", acquire("node-a")))
			if ops.Epoch != one.Epoch+1 || ops.Owner != "ops" {
				t.Fatalf("admin's re-acquire = %+v", ops)
			}
			owned(t, g1.keyCall(t, "secret-one", name, "renew", held(int64(ops.Epoch))), "ops")
			if a := g1.keyCall(t, "secret-ops", name, "release", held(int64(ops.Epoch))); a.status != http.StatusNoContent {
				t.Fatalf("admin's release = %d %s", a.status, a.body)
			}
			// A free lease is a takeover for any allowed key, same holder or not.
			two := leaseOf(t, g2.keyCall(t, "secret-two", name, "acquire", acquire("node-a")))
			if two.Epoch != ops.Epoch+1 || two.Owner != "key-two" || two.Token == "" {
				t.Fatalf("key two's takeover = %+v", two)
			}
			if got := leaseOf(t, do(t, "GET", g1.api.URL+"/v1/leases/"+name, bearer("secret-one"), "")); got.Owner != "key-two" {
				t.Fatalf("GET after the takeover = %+v", got)
			}
			owned(t, g1.keyCall(t, "secret-one", name, "renew", held(int64(two.Epoch))), "key-two")
		})
	}
}

// TestLeaseWithoutKeysHasNoOwner: without API keys nothing changes: grants
// are unowned, answers carry no owner, and any caller may use any lease.
func TestLeaseWithoutKeysHasNoOwner(t *testing.T) {
	g := newGatewayWith(t, boltFresh(t)(t), newUpstream(t), gatewayOptions{}, leaseRoutes...)
	a := g.acquire(t, "invoice-sweeper", "node-a", 30)
	l := leaseOf(t, a)
	if l.Owner != "" || bytes.Contains(a.body, []byte(`"owner"`)) {
		t.Fatalf("grant without keys = %s", a.body)
	}
	if l2 := leaseOf(t, g.acquire(t, "invoice-sweeper", "node-a", 30)); l2.Epoch != l.Epoch+1 {
		t.Fatalf("re-acquire = %+v", l2)
	}
	if r := g.renewLease(t, "invoice-sweeper", "node-a", int64(l.Epoch)+1); r.status != http.StatusOK {
		t.Fatalf("renew = %d %s", r.status, r.body)
	}
	if r := g.releaseLease(t, "invoice-sweeper", "node-a", int64(l.Epoch)+1); r.status != http.StatusNoContent {
		t.Fatalf("release = %d %s", r.status, r.body)
	}
}

// TestEpochExhaustedAnswers: a raw write at 2^63-1 on a resource never
// leased is admitted; every later acquire of the name answers 409
// epoch-exhausted without Retry-After (never 503), on every store, with and
// without keys.
func TestEpochExhaustedAnswers(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			up := newUpstream(t)
			g := newGatewayWith(t, b.fresh(t)(t), up, gatewayOptions{keys: ownershipKeys()},
				routeSpec{prefix: "/raw/", resource: "invoice-spent", tokens: policy.TokensRaw})
			top := strconv.FormatInt(math.MaxInt64, 10)
			if r := g.write(t, "/raw/x", top); r.status != http.StatusCreated {
				t.Fatalf("raw write at 2^63-1 = %d %s", r.status, r.body)
			}
			for i, secret := range []string{"secret-one", "secret-one", "secret-two", "secret-ops"} {
				a := g.keyCall(t, secret, "invoice-spent", "acquire", `{"holder":"node-a","ttl_seconds":15}`)
				if a.status != http.StatusConflict || a.header.Get("Retry-After") != "" {
					t.Fatalf("acquire %d = %d (Retry-After %q) %s, want 409 without Retry-After", i, a.status,
						a.header.Get("Retry-After"), a.body)
				}
				p := a.problem(t)
				if p["type"] != problem.TypeEpochExhausted || p["lease"] != "invoice-spent" || bytes.Contains(a.body, []byte(`"token`)) {
					t.Fatalf("409 problem = %s", a.body)
				}
				var exact struct {
					CurrentEpoch json.Number `json:"current_epoch"`
				}
				if err := json.Unmarshal(a.body, &exact); err != nil || exact.CurrentEpoch.String() != top {
					t.Fatalf("current_epoch = %q, %v; want %s", exact.CurrentEpoch, err, top)
				}
			}
			if r := do(t, "GET", g.api.URL+"/v1/leases/invoice-spent", bearer("secret-one"), ""); r.status != http.StatusNotFound {
				t.Fatalf("refused acquires left a lease: %d %s", r.status, r.body)
			}
			if r := g.write(t, "/raw/x", top); r.status != http.StatusCreated {
				t.Fatalf("raw write at 2^63-1 after the refusals = %d %s", r.status, r.body)
			}
			if e := g.fenceEpochWith(t, bearer("secret-ops"), "invoice-spent"); e != math.MaxInt64 {
				t.Fatalf("fence = %d", e)
			}
		})
	}
}
