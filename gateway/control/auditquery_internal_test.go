package control

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/fencegw/fencegw/tokens"
)

// TestAuditQueryIsStrict: a malformed audit query is a 400 problem naming
// the parameter, never a page of everything; name and resource, event and
// decision are aliases on both lists.
func TestAuditQueryIsStrict(t *testing.T) {
	refused := []struct{ raw, param string }{
		{"name=big;x", "name"},
		{"resource=a;limit=5", "resource"},
		{"%ZZ", "query"},
		{"resource=%ZZ", "resource"},
		{"res%ource=a", "query"},
		{"until=0001-01-01T00:00:00Z", "until"},
		{"since=0001-01-01T00:00:00Z", "since"},
		{"since=1969-12-31T23:59:59Z", "since"},
		{"since=2026-12-03T18:00:00Z&until=2026-12-03T17:00:00Z", "since"},
		{"since=yesterday", "since"},
		{"event=bogus", "event"},
		{"decision=admitted", "decision"},
		{"limit=0", "limit"},
		{"limit=1001", "limit"},
		{"limit=+5", "limit"},
		{"limit=05x", "limit"},
		{"limit=", "limit"},
		{"cursor=x", "cursor"},
		{"bogus=1", "bogus"},
		{"resource=", "resource"},
		{"resource", "resource"},
		{"holder=", "holder"},
		{"replica=%00", "replica"},
		{"resource=%00", "resource"},
		{"limit=1&limit=2", "limit"},
		{"name=a&resource=a", "resource"},
		{"event=stale&decision=stale", "decision"},
	}
	for _, c := range refused {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/v1/audit/rejections", nil)
		r.URL.RawQuery = c.raw
		if q, ok := auditQuery(w, r, tokens.AuditRefusals); ok {
			t.Errorf("%q accepted as %+v", c.raw, q)
			continue
		}
		var p struct{ Detail string }
		if w.Code != http.StatusBadRequest || w.Header().Get("Content-Type") != problem.ContentType ||
			json.Unmarshal(w.Body.Bytes(), &p) != nil || !strings.Contains(p.Detail, c.param) {
			t.Errorf("%q = %d %s %s, want a 400 problem naming %s", c.raw, w.Code, w.Header().Get("Content-Type"), w.Body, c.param)
		}
	}
	since := time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)
	accepted := []struct {
		raw    string
		stream tokens.AuditStream
		want   tokens.AuditQuery
	}{
		{"", tokens.AuditRefusals, tokens.AuditQuery{Limit: defaultAuditPage}},
		{"name=big%3Bx&decision=stale", tokens.AuditRefusals, tokens.AuditQuery{Resource: "big;x", Kind: "stale", Limit: defaultAuditPage}},
		{"resource=a+b&event=acquired&limit=7", tokens.AuditLeases, tokens.AuditQuery{Resource: "a b", Kind: "acquired", Limit: 7}},
		{"name=x&decision=expired&holder=h&replica=gw-1", tokens.AuditLeases,
			tokens.AuditQuery{Resource: "x", Kind: "expired", Holder: "h", Replica: "gw-1", Limit: defaultAuditPage}},
		{"since=2026-12-03T17:00:00Z&until=2026-12-03T17:00:00Z&cursor=1796317200000-cb97e754c8ce0a11", tokens.AuditRefusals,
			tokens.AuditQuery{Since: since, Until: since, Before: "1796317200000-cb97e754c8ce0a11", Limit: defaultAuditPage}},
	}
	for _, c := range accepted {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/v1/audit/"+string(c.stream), nil)
		r.URL.RawQuery = c.raw
		q, ok := auditQuery(w, r, c.stream)
		c.want.Stream = c.stream
		if !ok || q.Resource != c.want.Resource || q.Kind != c.want.Kind || q.Holder != c.want.Holder ||
			q.Replica != c.want.Replica || !q.Since.Equal(c.want.Since) || !q.Until.Equal(c.want.Until) ||
			q.Before != c.want.Before || q.Limit != c.want.Limit || q.Stream != c.want.Stream {
			t.Errorf("%q = %+v (%d %s), want %+v", c.raw, q, w.Code, w.Body, c.want)
		}
	}
}
