package gateway

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// FuzzAuditQuery: any query string is either a valid audit query (limit in
// range, a cursor of the API's own form, a kind the stream records, a
// valid resource name, times from 1970 on in order) or a 400 problem;
// never a panic. A query that url.ParseQuery cannot read whole is never
// accepted, and an accepted one filters by every parameter it gives:
// nothing is silently dropped.
func FuzzAuditQuery(f *testing.F) {
	for _, q := range []string{"", "limit=5", "resource=r&decision=stale&holder=h&replica=gw-1",
		"since=2026-12-03T17:00:00Z&until=2026-12-03T18:00:00.5Z", "cursor=1796317200000-cb97e754c8ce0a11",
		"limit=0", "limit=1001", "cursor=x", "since=yesterday", "bogus=1", "limit=1&limit=2", "%zz", "resource=%00",
		"name=big;x", "until=0001-01-01T00:00:00Z", "event=bogus", "name=a&event=expired", "resource=a&name=b"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, stream := range []tokens.AuditStream{tokens.AuditRefusals, tokens.AuditLeases} {
			r := httptest.NewRequest(http.MethodGet, "/v1/audit/"+string(stream), nil)
			r.URL.RawQuery = raw
			w := httptest.NewRecorder()
			q, ok := auditQuery(w, r, stream)
			if !ok {
				if w.Code != http.StatusBadRequest || w.Header().Get("Content-Type") != ProblemContentType {
					t.Fatalf("%q refused with %d %s, want a 400 problem", raw, w.Code, w.Header().Get("Content-Type"))
				}
				continue
			}
			checkAcceptedAuditQuery(t, raw, stream, q)
		}
	})
}

// checkAcceptedAuditQuery fails t unless q, accepted from raw, is valid
// and keeps every parameter raw gives.
func checkAcceptedAuditQuery(t *testing.T, raw string, stream tokens.AuditStream, q tokens.AuditQuery) {
	t.Helper()
	epoch := time.Unix(0, 0)
	if q.Limit < 1 || q.Limit > maxAuditPage || (q.Before != "" && !tokens.ValidAuditID(q.Before)) ||
		q.Stream != stream || (q.Kind != "" && !slices.Contains(auditKinds(stream), q.Kind)) ||
		(q.Resource != "" && tokens.ValidateResource(q.Resource) != nil) ||
		(!q.Since.IsZero() && q.Since.Before(epoch)) || (!q.Until.IsZero() && q.Until.Before(epoch)) ||
		(!q.Since.IsZero() && !q.Until.IsZero() && q.Since.After(q.Until)) {
		t.Fatalf("%q accepted as %+v", raw, q)
	}
	values, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatalf("%q accepted as %+v though url.ParseQuery fails: %v", raw, q, err)
	}
	for name, vs := range values {
		v := vs[0]
		var got string
		switch name {
		case "resource", "name":
			got = q.Resource
		case "decision", "event":
			got = q.Kind
		case "holder":
			got = q.Holder
		case "replica":
			got = q.Replica
		case "cursor":
			got = q.Before
		default:
			continue
		}
		if len(vs) != 1 || got != v || strings.ContainsRune(raw, ';') {
			t.Fatalf("%q accepted as %+v: %s=%q is not what it asked", raw, q, name, vs)
		}
	}
}
