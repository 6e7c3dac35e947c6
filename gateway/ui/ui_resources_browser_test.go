package ui_test

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fencegw/fencegw/internal/testutil/testbrowser"
)

// resources answers GET /v1/audit/resources from the fixture's names:
// those of its entries and the older ones, by prefix, paged by name.
func (f *auditFixture) resources(q url.Values) map[string]any {
	f.mu.Lock()
	names := slices.Clone(f.older)
	for _, e := range f.events {
		names = append(names, e["name"].(string))
	}
	for _, e := range f.refusals {
		names = append(names, e["resource"].(string))
	}
	f.mu.Unlock()
	slices.Sort(names)
	limit := 100
	if n, err := strconv.Atoi(q.Get("limit")); err == nil {
		limit = n
	}
	out, next := []map[string]any{}, ""
	for _, n := range slices.Compact(names) {
		if !strings.HasPrefix(n, q.Get("prefix")) || n <= q.Get("cursor") {
			continue
		}
		if len(out) == limit {
			next = out[len(out)-1]["name"].(string)
			break
		}
		out = append(out, map[string]any{"name": n})
	}
	return map[string]any{"resources": out, "next_cursor": next}
}

// TestUIResourceListReachesEveryName: the resource list comes from the
// whole audit, not from its newest entries: names whose entries are all
// older are listed, a page at a time ("More names"), and found by prefix.
func TestUIResourceListReachesEveryName(t *testing.T) {
	api := newAuditFixture(t, "")
	for i := range 250 {
		api.older = append(api.older, fmt.Sprintf("archive-%03d", i))
	}
	b := testbrowser.Start(t)
	ctx := b.ContextFor(t, 30*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(api.URL+"/ui/#resource=orders")); err != nil {
		t.Fatal(err)
	}
	listed := func(want func([]string) bool) []string {
		t.Helper()
		var names []string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			var err error
			names, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#resources .name')].map((e) => e.textContent)`))
			if err != nil {
				t.Fatal(err)
			}
			if want(names) {
				return names
			}
		}
		t.Fatalf("the resource list holds %d names: %q…", len(names), names[:min(5, len(names))])
		return nil
	}
	// The first page: 100 names in byte order, more to come.
	first := listed(func(n []string) bool { return len(n) == 100 })
	if first[1] != "archive-000" || first[99] != "archive-098" {
		t.Errorf("first page: %q … %q", first[:3], first[97:])
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("more-resources"))); err != nil {
		t.Fatal(err)
	}
	listed(func(n []string) bool { return len(n) == 200 })
	// A prefix finds names of every page.
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("resource-search"), "archive-24")); err != nil {
		t.Fatal(err)
	}
	got := listed(func(n []string) bool { return len(n) == 10 })
	if got[0] != "archive-240" || got[9] != "archive-249" {
		t.Errorf("names beginning with archive-24: %q", got)
	}
	more, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('more-resources').hidden`))
	if err != nil || !more {
		t.Errorf("More names shown after the last name (hidden=%v, %v)", more, err)
	}
	// The selection (from the hash) is shown though it is not listed.
	title, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('resource-title').textContent`))
	if err != nil || title != "orders" {
		t.Errorf("selected resource: %q, %v", title, err)
	}
}
