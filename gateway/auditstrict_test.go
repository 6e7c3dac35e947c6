package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway"
)

// TestAuditQueriesNeverWiden: through the control API, a malformed audit
// query is a 400 problem naming its parameter instead of a page of every
// entry, and name filters the refusals as resource does.
func TestAuditQueriesNeverWiden(t *testing.T) {
	g := newGatewayWith(t, boltFresh(t)(t), newUpstream(t), gatewayOptions{auditFlush: time.Minute}, leaseRoutes...)
	leaseOf(t, g.acquire(t, "invoice-sweeper", "node-a", 30))
	leaseOf(t, g.acquire(t, "invoice-sweeper", "node-a", 30)) // epoch 2
	if w := g.write(t, "/raw/x", "2"); w.status != http.StatusCreated {
		t.Fatalf("write at epoch 2: %d %s", w.status, w.body)
	}
	if w := g.write(t, "/raw/x", "1"); w.status != http.StatusPreconditionFailed {
		t.Fatalf("stale write: %d %s", w.status, w.body)
	}
	g.flushAudit(t)
	for _, c := range []struct{ path, param string }{
		{"/v1/audit/leases?name=big;x", "name"},
		{"/v1/audit/leases?%ZZ", "query"},
		{"/v1/audit/leases?until=0001-01-01T00:00:00Z", "until"},
		{"/v1/audit/leases?event=bogus", "event"},
		{"/v1/audit/rejections?decision=bogus", "decision"},
		{"/v1/audit/rejections?limit=1e3", "limit"},
	} {
		a := do(t, http.MethodGet, g.api.URL+c.path, nil, "")
		var p gateway.Problem
		if a.status != http.StatusBadRequest || json.Unmarshal(a.body, &p) != nil || !strings.Contains(p.Detail, c.param) {
			t.Errorf("GET %s = %d %s, want a 400 problem naming %s", c.path, a.status, a.body, c.param)
		}
	}
	a := do(t, http.MethodGet, g.api.URL+"/v1/audit/rejections?name=invoice-sweeper", nil, "")
	var rej gateway.Rejections
	if a.status != http.StatusOK || json.Unmarshal(a.body, &rej) != nil || len(rej.Rejections) != 1 ||
		rej.Rejections[0].Resource != "invoice-sweeper" {
		t.Fatalf("GET rejections?name=invoice-sweeper = %d %s, want its one refusal", a.status, a.body)
	}
	a = do(t, http.MethodGet, g.api.URL+"/v1/audit/rejections?name=big%3Bx", nil, "")
	if a.status != http.StatusOK || json.Unmarshal(a.body, &rej) != nil || len(rej.Rejections) != 0 {
		t.Fatalf("GET rejections?name=big%%3Bx = %d %s, want none", a.status, a.body)
	}
}
