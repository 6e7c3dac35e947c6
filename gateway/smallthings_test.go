package gateway_test

import (
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/control"
)

// TestMetricsNeedAKey: with api_keys, /metrics needs a key (any key) unless
// telemetry.metrics_public says it is open; without keys it is open.
func TestMetricsNeedAKey(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "fencegw_up 1\n") })
	keys := control.APIKeys{
		{Name: "sweeper", Hash: sha256.Sum256([]byte("s3cret-sweeper")), Leases: []string{"invoice-*"}},
		{Name: "ops", Hash: sha256.Sum256([]byte("s3cret-ops")), Admin: true},
	}
	for _, c := range []struct {
		name   string
		keys   control.APIKeys
		public bool
		key    string
		status int
	}{
		{"keys, no key", keys, false, "", 401},
		{"keys, a wrong key", keys, false, "wrong", 401},
		{"keys, a lease key", keys, false, "s3cret-sweeper", 200},
		{"keys, an admin key", keys, false, "s3cret-ops", 200},
		{"keys, metrics_public", keys, true, "", 200},
		{"no keys", nil, false, "", 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			api := httptest.NewServer(control.NewAPI(control.Options{Metrics: metrics, Keys: c.keys, MetricsPublic: c.public}))
			t.Cleanup(api.Close)
			header := map[string]string{}
			if c.key != "" {
				header["Authorization"] = "Bearer " + c.key
			}
			for _, method := range []string{"GET", "HEAD"} {
				a := do(t, method, api.URL+"/metrics", header, "")
				if a.status != c.status {
					t.Errorf("%s /metrics = %d %s, want %d", method, a.status, a.body, c.status)
				}
				if a.status == 200 && method == "GET" && !strings.Contains(string(a.body), "fencegw_up 1") {
					t.Errorf("GET /metrics = %q", a.body)
				}
				if a.status == 401 && strings.Contains(string(a.body), "fencegw_up") {
					t.Errorf("401 with the metrics: %q", a.body)
				}
			}
		})
	}
}

// TestHeadWhereverGet: every control API path that answers GET answers
// HEAD with the same status and headers and no body, a watch included
// (at once, not when the lease changes); 405's Allow lists HEAD beside GET.
func TestHeadWhereverGet(t *testing.T) {
	g := newGateway(t, boltFresh(t)(t), newUpstream(t), nil)
	if a := do(t, "POST", g.api.URL+"/v1/leases/x/acquire", nil, `{"holder":"a","ttl_seconds":30}`); a.status != 200 {
		t.Fatalf("acquire: %d %s", a.status, a.body)
	}
	for _, path := range []string{"/healthz", "/readyz", "/.well-known/jwks.json", "/ui/", "/ui/app.js", "/ui/style.css",
		"/ui/none.js", "/v1/leases/x", "/v1/leases/never", "/v1/fences/x", "/v1/audit/leases", "/v1/audit/rejections", "/nowhere"} {
		get := do(t, "GET", g.api.URL+path, nil, "")
		head := do(t, "HEAD", g.api.URL+path, nil, "")
		if head.status != get.status || head.status == http.StatusMethodNotAllowed {
			t.Errorf("HEAD %s = %d, GET %d", path, head.status, get.status)
		}
		if len(head.body) != 0 {
			t.Errorf("HEAD %s sent a body: %q", path, head.body)
		}
		if hc, gc := head.header.Get("Content-Type"), get.header.Get("Content-Type"); hc != gc {
			t.Errorf("HEAD %s Content-Type %q, GET %q", path, hc, gc)
		}
	}
	// A watch answers HEAD with its head, and ends.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "HEAD", g.api.URL+"/v1/leases/x/watch", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("HEAD watch: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("HEAD watch = %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	a := do(t, "DELETE", g.api.URL+"/healthz", nil, "")
	if a.status != http.StatusMethodNotAllowed || a.header.Get("Allow") != "GET, HEAD" {
		t.Errorf("DELETE /healthz = %d Allow %q, want 405 Allow \"GET, HEAD\"", a.status, a.header.Get("Allow"))
	}
}
