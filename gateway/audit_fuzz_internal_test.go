package gateway

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fencegw/fencegw/tokens"
)

// FuzzAuditQuery: any query string is either a valid audit query (limit in
// range, a cursor of the API's own form) or a 400 problem; never a panic.
func FuzzAuditQuery(f *testing.F) {
	for _, q := range []string{"", "limit=5", "resource=r&decision=stale&holder=h&replica=gw-1",
		"since=2026-12-03T17:00:00Z&until=2026-12-03T18:00:00.5Z", "cursor=1796317200000-cb97e754c8ce0a11",
		"limit=0", "limit=1001", "cursor=x", "since=yesterday", "bogus=1", "limit=1&limit=2", "%zz", "resource=%00"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r := httptest.NewRequest(http.MethodGet, "/v1/audit/rejections", nil)
		r.URL.RawQuery = raw
		w := httptest.NewRecorder()
		q, ok := auditQuery(w, r, tokens.AuditRefusals, "resource", "decision")
		if !ok {
			if w.Code != http.StatusBadRequest {
				t.Fatalf("%q refused with %d, want 400", raw, w.Code)
			}
			return
		}
		if q.Limit < 1 || q.Limit > maxAuditPage || (q.Before != "" && !tokens.ValidAuditID(q.Before)) ||
			q.Stream != tokens.AuditRefusals {
			t.Fatalf("%q accepted as %+v", raw, q)
		}
	})
}
