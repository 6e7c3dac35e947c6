package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/policy"
)

var rawLeaseRoutes = []routeSpec{
	{prefix: "/signed/", tokens: policy.TokensSigned},
	{prefix: "/raw/"},
	{prefix: "/trusted/", rawOnLeased: true},
}

// TestRawEpochNeverImpersonatesALease: a raw route refuses a resource this
// gateway leases (403 naming the signed route to use), at any epoch, also
// when the lease came after the route first wrote to the resource, and
// through another replica over a shared store; a route with
// raw_on_leased: allow trusts its clients. Refusals on raw routes never
// tell the current or highest issued epoch.
func TestRawEpochNeverImpersonatesALease(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			up := newUpstream(t)
			f := b.fresh(t)
			g := newGatewayWith(t, f(t), up, gatewayOptions{}, rawLeaseRoutes...)
			raw := func(g *gw, path, resource, epoch string) answer {
				return do(t, "POST", g.proxy.URL+path, map[string]string{gateway.TokenHeader: epoch, gateway.ResourceHeader: resource}, "x")
			}
			noEpochs := func(what string, a answer) {
				t.Helper()
				for _, k := range []string{"current_epoch", "highest", "issued"} {
					if strings.Contains(string(a.body), k) {
						t.Errorf("%s: the refusal tells %s: %s", what, k, a.body)
					}
				}
			}
			// An unleased resource: raw epochs fence it; a stale one is
			// refused without the current epoch.
			if a := raw(g, "/raw/x", "free", "5"); a.status != http.StatusCreated {
				t.Fatalf("raw write to an unleased resource = %d %s", a.status, a.body)
			}
			a := raw(g, "/raw/x", "free", "3")
			if a.status != http.StatusPreconditionFailed {
				t.Fatalf("stale raw write = %d %s", a.status, a.body)
			}
			noEpochs("stale raw write", a)

			l := leaseOf(t, g.acquire(t, "tenant-x", "node-a", 30))
			n := len(up.requests())
			for _, e := range []string{"1", "2", "9223372036854775807"} {
				a := raw(g, "/raw/x", "tenant-x", e)
				p := a.problem(t)
				if a.status != http.StatusForbidden || !strings.Contains(p["detail"].(string), "/signed/") {
					t.Fatalf("raw epoch %s on a leased resource = %d %s", e, a.status, a.body)
				}
				noEpochs("raw epoch "+e, a)
			}
			if len(up.requests()) != n {
				t.Fatalf("a refused raw write reached the upstream")
			}
			if a := raw(g, "/trusted/x", "tenant-x", "1"); a.status != http.StatusCreated {
				t.Fatalf("raw_on_leased: allow = %d %s", a.status, a.body)
			}
			if a := g.write(t, "/signed/x", l.Token); a.status != http.StatusCreated {
				t.Fatalf("the holder's signed write = %d %s", a.status, a.body)
			}

			// A resource leased after raw writes to it.
			if a := raw(g, "/raw/x", "late", "1"); a.status != http.StatusCreated {
				t.Fatalf("raw write before the lease = %d %s", a.status, a.body)
			}
			late := leaseOf(t, g.acquire(t, "late", "node-a", 30))
			if a := raw(g, "/raw/x", "late", "2"); a.status != http.StatusForbidden || late.Epoch != 2 {
				t.Fatalf("raw write at the new grant's epoch %d = %d %s", late.Epoch, a.status, a.body)
			}
			if b.name == "embedded" {
				return
			}
			// Leased through another replica, after this one wrote raw.
			g2 := newGatewayWith(t, f(t), up, gatewayOptions{}, rawLeaseRoutes...)
			if a := raw(g, "/raw/x", "elsewhere", "1"); a.status != http.StatusCreated {
				t.Fatalf("raw write before the lease = %d %s", a.status, a.body)
			}
			e := leaseOf(t, g2.acquire(t, "elsewhere", "node-b", 30))
			if a := raw(g, "/raw/x", "elsewhere", "2"); a.status != http.StatusForbidden || e.Epoch != 2 {
				t.Fatalf("raw write at another replica's grant %d = %d %s", e.Epoch, a.status, a.body)
			}
		})
	}
}
