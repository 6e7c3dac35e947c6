package gateway_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/fencegw/fencegw/gateway"
)

// lookAlikeNames would show on a page or in the audit as another name (or
// as nothing): every one of them is refused wherever a name is accepted.
var lookAlikeNames = []struct{ what, name string }{
	{"zero-width space", "invoice\u200bsweeper"},
	{"right-to-left override", "invoice\u202eteews"},
	{"NUL", "invoice\u0000sweeper"},
	{"byte order mark", "\ufeffinvoice-sweeper"},
	{"not NFC", "inve\u0301"},
}

// validUnicodeName is a non-ASCII name in NFC: accepted everywhere.
const validUnicodeName = "r\u00e9sum\u00e9-\u65e5\u672c"

// refusedAsBadName fails t unless a is a 400 problem+json: bad-resource,
// bad-request (an audit query's parameter) or bad-path (a path with a NUL).
func refusedAsBadName(t *testing.T, where string, a answer) {
	t.Helper()
	if a.status != http.StatusBadRequest {
		t.Fatalf("%s: %d %s, want 400", where, a.status, a.body)
	}
	p := a.problem(t)
	if typ := p["type"]; typ != problem.TypeBadResource && typ != problem.TypeBadRequest && typ != problem.TypeBadPath {
		t.Fatalf("%s: problem type %v, want %s", where, typ, problem.TypeBadResource)
	}
}

// TestLookAlikeNamesRefusedOnTheDataPlane: a resource named by a route's
// template or by the Fencing-Resource header is refused 400 before any
// fencing when it holds a control or format character or is not in NFC;
// nothing reaches the upstream, and a valid non-ASCII name is fenced.
func TestLookAlikeNamesRefusedOnTheDataPlane(t *testing.T) {
	up := newUpstream(t)
	g := newGateway(t, boltFresh(t)(t), up, nil,
		routeSpec{prefix: "/tenants/", resource: "tenant-{segment:1}"}, routeSpec{prefix: "/any/"})
	for _, c := range lookAlikeNames {
		refusedAsBadName(t, c.what+" in a path segment", g.write(t, "/tenants/"+url.PathEscape(c.name)+"/x", "1"))
		if !strings.ContainsRune(c.name, 0) { // a client cannot send a NUL in a header
			a := do(t, http.MethodPost, g.proxy.URL+"/any/x",
				map[string]string{gateway.TokenHeader: "1", gateway.ResourceHeader: c.name}, "payload")
			refusedAsBadName(t, c.what+" in "+gateway.ResourceHeader, a)
		}
	}
	if n := len(up.requests()); n != 0 {
		t.Fatalf("%d refused writes reached the upstream", n)
	}
	if a := g.write(t, "/tenants/"+url.PathEscape(validUnicodeName)+"/x", "1"); a.status != http.StatusCreated {
		t.Fatalf("valid non-ASCII name in a path segment: %d %s", a.status, a.body)
	}
	if got := g.fenceEpoch(t, "tenant-"+validUnicodeName); got != 1 {
		t.Fatalf("fence of the valid non-ASCII name: epoch %d, want 1", got)
	}
}

// TestLookAlikeNamesRefusedByTheControlAPI: lease names (acquire, renew,
// release, read, watch), holders, the fence's resource and the audit's
// resource and holder filters are refused 400 problem+json when they hold
// a control or format character or are not in NFC; a valid non-ASCII name
// and holder are leased.
func TestLookAlikeNamesRefusedByTheControlAPI(t *testing.T) {
	g := newGateway(t, boltFresh(t)(t), newUpstream(t), nil)
	for _, c := range lookAlikeNames {
		esc := url.PathEscape(c.name)
		refusedAsBadName(t, c.what+": acquire", g.acquire(t, esc, "node-a", 5))
		refusedAsBadName(t, c.what+": renew", g.renewLease(t, esc, "node-a", 1))
		refusedAsBadName(t, c.what+": release", g.releaseLease(t, esc, "node-a", 1))
		refusedAsBadName(t, c.what+": holder", g.acquire(t, "jobs", c.name, 5))
		refusedAsBadName(t, c.what+": renew holder", g.renewLease(t, "jobs", c.name, 1))
		refusedAsBadName(t, c.what+": release holder", g.releaseLease(t, "jobs", c.name, 1))
		for _, path := range []string{"/v1/leases/" + esc, "/v1/leases/" + esc + "/watch", "/v1/fences/" + esc,
			"/v1/audit/rejections?resource=" + url.QueryEscape(c.name),
			"/v1/audit/leases?name=" + url.QueryEscape(c.name),
			"/v1/audit/leases?holder=" + url.QueryEscape(c.name)} {
			refusedAsBadName(t, c.what+": GET "+path, do(t, http.MethodGet, g.api.URL+path, nil, ""))
		}
	}
	l := leaseOf(t, g.acquire(t, url.PathEscape(validUnicodeName), validUnicodeName, 5))
	if l.Name != validUnicodeName || l.Holder != validUnicodeName || l.Epoch != 1 {
		t.Fatalf("valid non-ASCII lease: %+v", l)
	}
	if a := g.renewLease(t, url.PathEscape(validUnicodeName), validUnicodeName, int64(l.Epoch)); a.status != http.StatusOK {
		t.Fatalf("renew of the valid non-ASCII lease: %d %s", a.status, a.body)
	}
	a := do(t, http.MethodGet, g.api.URL+"/v1/audit/leases?"+url.Values{"name": {validUnicodeName}}.Encode(), nil, "")
	if a.status != http.StatusOK {
		t.Fatalf("audit query for the valid non-ASCII lease: %d %s", a.status, a.body)
	}
}
