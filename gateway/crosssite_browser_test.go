package gateway_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fencegw/fencegw/internal/testutil/testbrowser"
)

// crossSitePage is a page of another origin that tries to take leases on
// the control API at %[1]s, as a page anyone can visit would: an HTML form
// posting text/plain that reads as JSON, a no-cors fetch (no preflight),
// and a JSON fetch (which needs a preflight the control API never grants).
const crossSitePage = `<!doctype html>
<title>another site</title>
<iframe name="sink"></iframe>
<form id="f" method="POST" enctype="text/plain" target="sink" action="%[1]s/v1/leases/by-form/acquire">
<input name='{"ttl_seconds":60,"holder":"evil' value='x"}'>
</form>
<script>
window.outcome = {};
fetch('%[1]s/v1/leases/by-fetch/acquire', {method: 'POST', mode: 'no-cors',
  headers: {'Content-Type': 'text/plain'}, body: '{"holder":"evil","ttl_seconds":60}'})
  .then(() => { window.outcome.nocors = 'sent'; }, e => { window.outcome.nocors = 'failed: ' + e; });
fetch('%[1]s/v1/leases/by-json/acquire', {method: 'POST', mode: 'cors',
  headers: {'Content-Type': 'application/json'}, body: '{"holder":"evil","ttl_seconds":60}'})
  .then(r => { window.outcome.json = 'answered ' + r.status; }, e => { window.outcome.json = 'failed: ' + e; });
document.getElementById('f').submit();
</script>`

// TestControlRefusesCrossSitePageInBrowser: in a real Chromium, a page
// served from another origin on loopback (another port) tries a form POST
// and fetches to a control API without api_keys; none acquires a lease.
func TestControlRefusesCrossSitePageInBrowser(t *testing.T) {
	g := newGateway(t, boltFresh(t)(t), newUpstream(t), nil)
	seen := &seenRequests{}
	api := httptest.NewServer(seen.record(g.server.Control()))
	t.Cleanup(api.Close)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, crossSitePage, api.URL)
	}))
	t.Cleanup(page.Close)

	b := testbrowser.Start(t)
	ctx := b.ContextFor(t, 30*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(page.URL)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`window.outcome && window.outcome.nocors && window.outcome.json`)); err != nil {
		t.Fatalf("the page's fetches never settled: %v", err)
	}
	// The form and the no-cors fetch reach the control API: they are what
	// it must refuse itself. The JSON fetch's preflight is refused, so its
	// POST is never sent.
	deadline := time.Now().Add(10 * time.Second)
	for !seen.has("POST /v1/leases/by-form/acquire") || !seen.has("POST /v1/leases/by-fetch/acquire") {
		if time.Now().After(deadline) {
			t.Fatalf("the control API never saw the form and the fetch; it saw %q", seen.list())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, s := range seen.list() {
		if strings.HasPrefix(s, "POST ") && !strings.HasSuffix(s, " 403") && !strings.HasSuffix(s, " 415") {
			t.Errorf("the control API answered a page of another origin: %s", s)
		}
	}
	for _, name := range []string{"by-form", "by-fetch", "by-json"} {
		if a := do(t, "GET", api.URL+"/v1/leases/"+name, nil, ""); a.status != http.StatusNotFound {
			t.Errorf("lease %s = %d %s: a page of another origin acquired it", name, a.status, a.body)
		}
	}
	t.Logf("the control API saw %q", seen.list())
}

// seenRequests records "METHOD path status" of every request a handler
// answers.
type seenRequests struct {
	mu   sync.Mutex
	seen []string
}

func (s *seenRequests) record(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.seen = append(s.seen, fmt.Sprintf("%s %s %d", r.Method, r.URL.Path, sw.status))
	})
}

func (s *seenRequests) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// has reports whether a request starting with prefix was answered.
func (s *seenRequests) has(prefix string) bool {
	return slices.ContainsFunc(s.list(), func(v string) bool { return strings.HasPrefix(v, prefix+" ") })
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}
