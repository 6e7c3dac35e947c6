package ui_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/ui"

	"github.com/fencegw/fencegw/wire"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/fencegw/fencegw/internal/testutil/testbrowser"
	"github.com/fencegw/fencegw/internal/testutil/testtimeline"
)

// The timeline page in a real browser, against a fixture control API that
// serves the audit JSON of a takeover: node-a holds "orders" at epoch 1,
// lapses, node-b takes over at epoch 2 after the lock-delay, and a write of
// node-a's at epoch 1 is refused.

const (
	fixtureTraceURL = "https://tracing.example/trace/{trace_id}"
	traceA          = "4bf92f3577b34da6a3ce929d0e0e4736"
	traceB          = "0af7651916cd43dd8448eb211c80319c"
	// xssName is a resource (and holder) name that would run script if
	// the page ever wrote names as HTML.
	xssName = `<img src=x onerror="document.title='pwned'">`
)

func TestUITimelineInBrowser(t *testing.T) {
	api := newAuditFixture(t, "")
	b := testbrowser.Start(t)

	v := testtimeline.Check(t, b, api.URL, testtimeline.Want{
		Resource: "orders",
		Grants: []testtimeline.Grant{
			{Holder: "node-a", Epoch: 1, Ended: "lapsed"},
			{Holder: "node-b", Epoch: 2, Ended: "held"},
		},
		Refusals:  []testtimeline.Refusal{{Decision: "stale", Presented: 1, Current: 2, Count: 3}},
		LockDelay: true,
		Resources: []string{"orders", "invoices", xssName},
		TraceURLs: []string{"https://tracing.example/trace/" + traceA, "https://tracing.example/trace/" + traceB},
	})
	testtimeline.SaveScreenshot(t, b)

	// The live state of the selected resource is shown.
	if !strings.Contains(v.Live, "node-b · epoch 2 · held") || !strings.Contains(v.Live, "epoch 2") {
		t.Errorf("live state %q lacks the lease and the fence", v.Live)
	}
	// 4 renewal ticks of node-a's grant, 12 of node-b's, counted in their tooltips.
	var renewals []string
	for _, m := range v.Marks {
		if m.Kind == "renewal" {
			renewals = append(renewals, m.Title)
		}
	}
	if len(renewals) != 2 || !strings.Contains(renewals[0], "4 renewals of epoch 1 (node-a)") || !strings.Contains(renewals[1], "12 renewals of epoch 2 (node-b)") {
		t.Errorf("renewal ticks: %q", renewals)
	}

	// Tab reaches the marks with the keyboard: the first Tab stops are
	// the resource search field and links, then the timeline's marks.
	ctx := b.ContextFor(t, 10*time.Second)
	var kinds []string
	for range 16 {
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
			t.Fatal(err)
		}
		k, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.getAttribute('data-kind') || document.activeElement.tagName`))
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, k)
	}
	for _, want := range []string{"grant", "renewal", "lock-delay", "refusal"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("Tab never reached a %s mark; it visited %q", want, kinds)
		}
	}
}

// TestUITimelineNamesAreText: names that look like HTML stay text.
func TestUITimelineNamesAreText(t *testing.T) {
	api := newAuditFixture(t, "")
	b := testbrowser.Start(t)
	testtimeline.Check(t, b, api.URL, testtimeline.Want{
		Resource: xssName,
		Grants:   []testtimeline.Grant{{Holder: xssName, Epoch: 7}},
	})
	ctx := b.ContextFor(t, 10*time.Second)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]any](`[document.querySelectorAll('img').length, document.title, document.getElementById('resource-title').textContent]`))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint([]any{0.0, "fencegw · leader timeline", xssName}) {
		t.Errorf("page after an HTML-like name: %v", got)
	}
}

// TestUITimelineIsLive: a refusal recorded after the page loaded appears
// within a poll, with no reload, keeping the selection, the focus and the
// scroll position.
func TestUITimelineIsLive(t *testing.T) {
	api := newAuditFixture(t, "")
	b := testbrowser.Start(t)
	testtimeline.Check(t, b, api.URL, testtimeline.Want{Resource: "orders", Grants: []testtimeline.Grant{{Holder: "node-b", Epoch: 2}}})

	ctx := b.ContextFor(t, 20*time.Second)
	setup := `window.loadedOnce = true;
		window.scrollTo(0, document.body.scrollHeight);
		document.querySelector('#timeline [data-kind="grant"]').focus();
		[window.scrollY, document.activeElement.getAttribute('data-key')]`
	before, err := chromedp.Run(ctx, chromedp.Evaluate[[]any](setup))
	if err != nil {
		t.Fatal(err)
	}
	api.addRefusal(map[string]any{
		"id": "live-1", "resource": "orders", "decision": "stale", "presented_epoch": 1, "current_epoch": 2,
		"holder": "node-a", "replica": "gw-3", "route": "emails", "status": 412, "count": 5,
		"first": fixtureStamp(time.Now().Add(-time.Second)), "last": fixtureStamp(time.Now()), "trace_ids": []string{},
	})
	v := testtimeline.Wait(t, b, testtimeline.Want{
		Resource: "orders",
		Refusals: []testtimeline.Refusal{{Decision: "stale", Presented: 1, Current: 2, Count: 3}, {Decision: "stale", Presented: 1, Current: 2, Count: 5}},
	})
	after, err := chromedp.Run(ctx, chromedp.Evaluate[[]any](`[window.scrollY, document.activeElement.getAttribute('data-key'), window.loadedOnce === true, location.hash]`))
	if err != nil {
		t.Fatal(err)
	}
	if before[1] != after[1] || after[2] != true || after[3] != "#resource=orders" {
		t.Errorf("after the update: focus %v (was %v), no reload %v, hash %v", after[1], before[1], after[2], after[3])
	}
	if before[0] != after[0] {
		t.Errorf("scroll moved from %v to %v", before[0], after[0])
	}
	if !slices.ContainsFunc(v.RefusalRows, func(r []string) bool { return slices.Contains(r, "gw-3") }) {
		t.Errorf("refusal table lacks the new row: %q", v.RefusalRows)
	}
}

// TestUITimelineAsksForAKey: with API keys the page asks for an admin key,
// says when one is refused, sends it as a bearer token, and forgets it.
func TestUITimelineAsksForAKey(t *testing.T) {
	api := newAuditFixture(t, "admin-secret")
	b := testbrowser.Start(t)
	ctx := b.ContextFor(t, 30*time.Second)
	enterKey := func(key string) {
		t.Helper()
		if err := chromedp.Do(ctx,
			chromedp.WaitVisible(chromedp.ID("key-input")),
			chromedp.SendKeys(chromedp.ID("key-input"), key),
			chromedp.Click(chromedp.CSS(`#key-form button[type="submit"]`)),
		); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(api.URL+"/ui/")); err != nil {
		t.Fatal(err)
	}
	enterKey("lease-key") // a key the fixture knows, but not an admin's: 403
	if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`document.getElementById('key-reason').textContent.includes('not an admin key')`)); err != nil {
		t.Fatalf("no 403 message: %v", err)
	}
	enterKey("admin-secret")
	// The first resource by name ('<' sorts before letters) is selected.
	testtimeline.CheckHere(t, b, api.URL, testtimeline.Want{Resource: xssName, Resources: []string{"invoices", "orders"}})
	if !api.sawAuthorization("Bearer admin-secret") {
		t.Error("the fixture never saw the admin key as a bearer token")
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("forget-key")),
		chromedp.WaitVisible(chromedp.ID("key-input")),
		chromedp.WaitNotVisible(chromedp.ID("main")),
	); err != nil {
		t.Fatal(err)
	}
	if stored, err := chromedp.Run(ctx, chromedp.Evaluate[int](`sessionStorage.length`)); err != nil || stored != 0 {
		t.Errorf("after Forget: %d items in sessionStorage (%v)", stored, err)
	}
}

// ---- The fixture control API ----

// auditFixture serves the page and the audit endpoints from fixed data.
type auditFixture struct {
	*httptest.Server
	mu       sync.Mutex
	events   []map[string]any
	refusals []map[string]any
	// older are names only GET /v1/audit/resources knows: their entries
	// are older than the newest page.
	older    []string
	authSeen map[string]bool
	adminKey string
}

func fixtureStamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// newAuditFixture serves the takeover story. With adminKey, the audit and
// fence endpoints need "Bearer adminKey" (401 without a key, 403 with
// "lease-key"), as the control API does with API keys.
func newAuditFixture(t *testing.T, adminKey string) *auditFixture {
	now := time.Now()
	base := now.Add(-90 * time.Second)
	at := func(s float64) string { return fixtureStamp(base.Add(time.Duration(s * float64(time.Second)))) }
	f := &auditFixture{adminKey: adminKey, authSeen: map[string]bool{}}
	f.events = []map[string]any{
		{"id": "e1", "name": "orders", "event": "acquired", "holder": "node-a", "epoch": 1, "replica": "gw-1", "count": 1,
			"first": at(0), "last": at(0), "expires_at": at(10), "ttl_seconds": 10, "lock_delay_seconds": 3, "trace_ids": []string{}},
		{"id": "e2", "name": "orders", "event": "renewed", "holder": "node-a", "epoch": 1, "replica": "gw-1", "count": 4,
			"first": at(2), "last": at(8), "expires_at": at(18), "trace_ids": []string{}},
		{"id": "e3", "name": "orders", "event": "expired", "holder": "node-a", "epoch": 1, "replica": "gw-2", "count": 1,
			"first": at(18), "last": at(18), "lock_delay_seconds": 3, "trace_ids": []string{}},
		{"id": "e4", "name": "orders", "event": "acquired", "holder": "node-b", "epoch": 2, "replica": "gw-2", "count": 1,
			"first": at(25), "last": at(25), "expires_at": at(35), "ttl_seconds": 10, "lock_delay_seconds": 3,
			"previous_holder": "node-a", "previous_epoch": 1, "trace_ids": []string{traceB}},
		{"id": "e5", "name": "orders", "event": "renewed", "holder": "node-b", "epoch": 2, "replica": "gw-2", "count": 12,
			"first": at(28), "last": fixtureStamp(now.Add(-2 * time.Second)), "expires_at": fixtureStamp(now.Add(8 * time.Second)), "trace_ids": []string{}},
		{"id": "x1", "name": xssName, "event": "acquired", "holder": xssName, "epoch": 7, "replica": "gw-1", "count": 1,
			"first": at(5), "last": at(5), "expires_at": at(15), "ttl_seconds": 10, "trace_ids": []string{}},
	}
	f.refusals = []map[string]any{
		{"id": "r1", "resource": "orders", "decision": "stale", "presented_epoch": 1, "current_epoch": 2, "holder": "node-a",
			"replica": "gw-1", "route": "emails", "status": 412, "count": 3, "first": at(30), "last": at(31.5),
			"trace_ids": []string{traceA, traceB}},
		{"id": "r2", "resource": "invoices", "decision": "missing-token", "replica": "gw-2", "route": "emails",
			"status": 428, "count": 1, "first": at(40), "last": at(40), "trace_ids": []string{}},
		{"id": "r3", "resource": xssName, "decision": "stale", "presented_epoch": 6, "current_epoch": 7, "holder": xssName,
			"replica": "gw-1", "route": "emails", "status": 412, "count": 2, "first": at(12), "last": at(13), "trace_ids": []string{}},
	}
	live := map[string]any{"name": "orders", "holder": "node-b", "epoch": 2, "held": true, "ttl_seconds": 10,
		"expires_at": fixtureStamp(now.Add(8 * time.Second))}

	mux := http.NewServeMux()
	mux.Handle("/ui/", ui.NewUI(fixtureTraceURL))
	mux.HandleFunc("GET /v1/audit/leases", func(w http.ResponseWriter, r *http.Request) {
		if f.authorize(w, r) {
			writeFixtureJSON(w, map[string]any{"events": f.list(&f.events, "name", r.URL.Query().Get("name"))})
		}
	})
	mux.HandleFunc("GET /v1/audit/rejections", func(w http.ResponseWriter, r *http.Request) {
		if f.authorize(w, r) {
			writeFixtureJSON(w, map[string]any{"rejections": f.list(&f.refusals, "resource", r.URL.Query().Get("resource"))})
		}
	})
	mux.HandleFunc("GET /v1/audit/resources", func(w http.ResponseWriter, r *http.Request) {
		if f.authorize(w, r) {
			writeFixtureJSON(w, f.resources(r.URL.Query()))
		}
	})
	mux.HandleFunc("GET /v1/leases/{name}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("name") != "orders" {
			fixtureProblem(w, http.StatusNotFound)
		} else if f.authorize(w, r) {
			writeFixtureJSON(w, live)
		}
	})
	mux.HandleFunc("GET /v1/fences/{name}", func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.PathValue("name") == "invoices":
			fixtureProblem(w, http.StatusForbidden) // the page must tolerate it
		case r.PathValue("name") != "orders":
			fixtureProblem(w, http.StatusNotFound)
		case f.authorize(w, r):
			writeFixtureJSON(w, map[string]any{"resource": "orders", "epoch": 2})
		}
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

// authorize answers 401 or 403 as the control API does, and notes the
// Authorization headers it saw.
func (f *auditFixture) authorize(w http.ResponseWriter, r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	f.mu.Lock()
	f.authSeen[auth] = true
	f.mu.Unlock()
	switch {
	case f.adminKey == "" || auth == "Bearer "+f.adminKey:
		return true
	case auth == "Bearer lease-key":
		fixtureProblem(w, http.StatusForbidden)
	default:
		w.Header().Set("WWW-Authenticate", "Bearer")
		fixtureProblem(w, http.StatusUnauthorized)
	}
	return false
}

func (f *auditFixture) sawAuthorization(v string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.authSeen[v]
}

// list returns the entries whose field is value ("" for all), newest first.
func (f *auditFixture) list(from *[]map[string]any, field, value string) []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []map[string]any
	for _, e := range *from {
		if value == "" || e[field] == value {
			out = append(out, e)
		}
	}
	last := func(e map[string]any) time.Time { t, _ := time.Parse(time.RFC3339Nano, e["last"].(string)); return t }
	sort.SliceStable(out, func(i, j int) bool { return last(out[i]).After(last(out[j])) })
	return out
}

func (f *auditFixture) addRefusal(r map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refusals = append(f.refusals, r)
}

func writeFixtureJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func fixtureProblem(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", wire.ProblemContentType)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"status": status, "title": http.StatusText(status), "detail": "fixture"})
}
