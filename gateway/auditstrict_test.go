package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/wire"
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
		var p wire.Problem
		if a.status != http.StatusBadRequest || json.Unmarshal(a.body, &p) != nil || !strings.Contains(p.Detail, c.param) {
			t.Errorf("GET %s = %d %s, want a 400 problem naming %s", c.path, a.status, a.body, c.param)
		}
	}
	a := do(t, http.MethodGet, g.api.URL+"/v1/audit/rejections?name=invoice-sweeper", nil, "")
	var rej wire.Rejections
	if a.status != http.StatusOK || json.Unmarshal(a.body, &rej) != nil || len(rej.Rejections) != 1 ||
		rej.Rejections[0].Resource != "invoice-sweeper" {
		t.Fatalf("GET rejections?name=invoice-sweeper = %d %s, want its one refusal", a.status, a.body)
	}
	a = do(t, http.MethodGet, g.api.URL+"/v1/audit/rejections?name=big%3Bx", nil, "")
	if a.status != http.StatusOK || json.Unmarshal(a.body, &rej) != nil || len(rej.Rejections) != 0 {
		t.Fatalf("GET rejections?name=big%%3Bx = %d %s, want none", a.status, a.body)
	}
}

// TestAuditResourcesListsEveryName: GET /v1/audit/resources lists every
// name in the audit, beyond any page of entries, by prefix and paged; its
// query is as strict as the lists'.
func TestAuditResourcesListsEveryName(t *testing.T) {
	g := newGatewayWith(t, boltFresh(t)(t), newUpstream(t), gatewayOptions{auditFlush: time.Minute}, leaseRoutes...)
	const n = 1100
	for i := range n {
		g.acquire(t, fmt.Sprintf("job-%04d", i), "node-a", 30)
	}
	g.flushAudit(t)
	var names []string
	cursor := ""
	for page := 0; page < 10; page++ {
		query := url.Values{"prefix": {"job-"}, "limit": {"500"}}
		if cursor != "" {
			query.Set("cursor", cursor)
		}
		a := do(t, http.MethodGet, g.api.URL+"/v1/audit/resources?"+query.Encode(), nil, "")
		var body wire.AuditResources
		if a.status != http.StatusOK || json.Unmarshal(a.body, &body) != nil {
			t.Fatalf("page %d: %d %s", page, a.status, a.body)
		}
		for _, r := range body.Resources {
			names = append(names, r.Name)
		}
		if cursor = body.NextCursor; cursor == "" {
			break
		}
	}
	if len(names) != n || names[0] != "job-0000" || names[n-1] != fmt.Sprintf("job-%04d", n-1) {
		t.Fatalf("listed %d names (%v … ), want %d", len(names), names[:min(3, len(names))], n)
	}
	for _, c := range []struct{ query, param string }{
		{"limit=0", "limit"}, {"prefix=%ZZ", "prefix"}, {"bogus=1", "bogus"}, {"cursor=", "cursor"}, {"prefix=a;b", "prefix"},
	} {
		a := do(t, http.MethodGet, g.api.URL+"/v1/audit/resources?"+c.query, nil, "")
		var p wire.Problem
		if a.status != http.StatusBadRequest || json.Unmarshal(a.body, &p) != nil || !strings.Contains(p.Detail, c.param) {
			t.Errorf("GET resources?%s = %d %s, want a 400 naming %s", c.query, a.status, a.body, c.param)
		}
	}
}
