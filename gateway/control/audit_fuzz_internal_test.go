package control

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/fencegw/fencegw/gateway/problem"

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
				if w.Code != http.StatusBadRequest || w.Header().Get("Content-Type") != problem.ContentType {
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
		(q.Holder != "" && tokens.ValidateResource(q.Holder) != nil) ||
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

// FuzzAuditResourceQuery: any query string of GET /v1/audit/resources is
// either a valid query (limit in range, a prefix without control
// characters, a cursor that is a resource name) or a *queryError; never a
// panic, never a query url.ParseQuery cannot read whole.
func FuzzAuditResourceQuery(f *testing.F) {
	for _, q := range []string{"", "prefix=job-&limit=500&cursor=job-0499", "prefix=", "limit=0", "cursor=", "bogus=1",
		"prefix=a;b", "%zz", "prefix=%00", "limit=1&limit=2"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := parseResourceQuery(raw)
		if err != nil {
			if _, ok := err.(*queryError); !ok {
				t.Fatalf("%q: error %T %v, want a *queryError", raw, err, err)
			}
			return
		}
		if _, perr := url.ParseQuery(raw); perr != nil || q.Limit < 1 || q.Limit > maxAuditPage ||
			(q.After != "" && tokens.ValidateResource(q.After) != nil) || strings.ContainsFunc(q.Prefix, unicode.IsControl) {
			t.Fatalf("%q accepted as %+v (ParseQuery: %v)", raw, q, perr)
		}
	})
}
