// Package testtimeline reads and checks the leader-timeline page
// (gateway/ui) in a headless browser, for the page's own tests and the
// end-to-end tests against a real gateway. Only tests import it.
package testtimeline

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fencegw/fencegw/internal/testutil/testbrowser"
)

// Want is what the page must show for one resource (a subset: the
// page may show more).
type Want struct {
	Resource  string
	Grants    []Grant
	Refusals  []Refusal
	LockDelay bool     // a hatched, labelled lock-delay band
	Resources []string // names the resource list must hold
	TraceURLs []string // trace links the refusal table must hold
}

// Grant is a band: its label shows "holder · epoch N"; Ended, when
// set, is how it ended ("lapsed", "released", "held").
type Grant struct {
	Holder string
	Epoch  int64
	Ended  string
}

// Refusal is a refusal mark and a table row.
type Refusal struct {
	Decision           string
	Presented, Current int64
	Count              int
}

// View is what the page shows, read from its DOM.
type View struct {
	Title       string     `json:"title"`
	Resources   []string   `json:"resources"`
	Selected    string     `json:"selected"`
	Live        string     `json:"live"`
	Marks       []Mark     `json:"marks"`
	RefusalRows [][]string `json:"refusalRows"`
	GrantRows   [][]string `json:"grantRows"`
	TraceLinks  []string   `json:"traceLinks"`
	KeyForm     bool       `json:"keyForm"`
	Status      string     `json:"status"`
}

// Mark is one SVG mark of the timeline.
type Mark struct {
	Kind      string `json:"kind"`
	TabIndex  string `json:"tabindex"`
	Role      string `json:"role"`
	Label     string `json:"label"`
	Title     string `json:"title"`
	Text      string `json:"text"`
	Focusable bool   `json:"focusable"`
	Fill      string `json:"fill"` // the computed fill of its first shape
}

// readJS reads View from the page.
const readJS = `(() => {
	const txt = (e) => (e ? e.textContent : '');
	const restore = document.activeElement;
	const marks = [...document.querySelectorAll('#timeline [data-kind]')].map((m) => {
		m.focus({ preventScroll: true });
		const shape = m.querySelector('rect, path, line');
		return {
			kind: m.getAttribute('data-kind'), tabindex: m.getAttribute('tabindex'), role: m.getAttribute('role'),
			label: m.getAttribute('aria-label') || '', title: txt(m.querySelector(':scope > title')),
			text: [...m.querySelectorAll('text')].map((t) => t.textContent).join(' | '),
			focusable: document.activeElement === m,
			fill: shape ? getComputedStyle(shape).fill : '',
		};
	});
	if (restore && restore !== document.body) restore.focus({ preventScroll: true });
	else if (document.activeElement) document.activeElement.blur();
	const rows = (id) => [...document.querySelectorAll('#' + id + ' tr')].map((tr) => [...tr.cells].map((c) => c.textContent));
	return {
		title: txt(document.getElementById('resource-title')),
		resources: [...document.querySelectorAll('#resources a .name')].map(txt),
		selected: txt(document.querySelector('#resources a[aria-current="true"] .name')),
		live: txt(document.getElementById('live')),
		marks, refusalRows: rows('refusals'), grantRows: rows('grants'),
		traceLinks: [...document.querySelectorAll('#refusals a')].map((a) => a.href),
		keyForm: !document.getElementById('key-form').hidden,
		status: txt(document.getElementById('status')),
	};
})()`

// Check opens the page of want.Resource on the control API at
// baseURL and checks it shows want (waiting for the page's polls), with
// every mark keyboard focusable and self-describing, no request to another
// origin, and no script error or CSP violation. It returns what it read.
func Check(t *testing.T, b *testbrowser.Browser, baseURL string, want Want) View {
	t.Helper()
	ctx := b.ContextFor(t, 20*time.Second)
	page := baseURL + "/ui/#" + url.Values{"resource": {want.Resource}}.Encode()
	if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
		t.Fatalf("opening %s: %v", page, err)
	}
	return CheckHere(t, b, baseURL, want)
}

// CheckHere is Check on the page the browser shows.
func CheckHere(t *testing.T, b *testbrowser.Browser, baseURL string, want Want) View {
	t.Helper()
	v := Wait(t, b, want)
	for _, m := range v.Marks {
		if m.TabIndex != "0" || m.Role != "img" || m.Label == "" || m.Title == "" || !m.Focusable {
			t.Errorf("%s mark is not a focusable, labelled, titled element: %+v", m.Kind, m)
		}
		if m.Label != strings.ReplaceAll(m.Title, "\n", "; ") {
			t.Errorf("%s mark: aria-label %q and tooltip %q differ", m.Kind, m.Label, m.Title)
		}
	}
	if out := b.RequestsOutside(strings.TrimSuffix(baseURL, "/")); len(out) > 0 {
		t.Errorf("the page made requests outside %s: %q", baseURL, out)
	}
	if p := b.Problems(); len(p) > 0 {
		t.Errorf("the page reported problems: %q", p)
	}
	return v
}

// Wait reads the page until it shows want (15 s at most).
func Wait(t *testing.T, b *testbrowser.Browser, want Want) View {
	t.Helper()
	ctx := b.ContextFor(t, 20*time.Second)
	deadline := time.Now().Add(15 * time.Second)
	for {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[View](readJS))
		if err != nil {
			t.Fatalf("reading the page: %v", err)
		}
		miss := mismatch(v, want)
		if miss == "" {
			return v
		}
		if time.Now().After(deadline) {
			dump, _ := json.MarshalIndent(v, "", "  ")
			t.Fatalf("the page does not show what it should: %s\npage: %s\nproblems: %q", miss, dump, b.Problems())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// mismatch says what of want v lacks ("" when nothing).
func mismatch(v View, want Want) string {
	if v.KeyForm {
		return "the page asks for an API key (status: " + v.Status + ")"
	}
	if v.Title != want.Resource || v.Selected != want.Resource {
		return fmt.Sprintf("resource %q selected %q, want %q", v.Title, v.Selected, want.Resource)
	}
	for _, r := range want.Resources {
		if !slices.Contains(v.Resources, r) {
			return fmt.Sprintf("resource list %q lacks %q", v.Resources, r)
		}
	}
	for _, g := range want.Grants {
		label := fmt.Sprintf("%s · epoch %d", g.Holder, g.Epoch)
		ok := slices.ContainsFunc(v.Marks, func(m Mark) bool {
			return m.Kind == "grant" && strings.Contains(m.Text, label) &&
				strings.Contains(m.Title, fmt.Sprintf("Grant: %s, epoch %d", g.Holder, g.Epoch)) &&
				(g.Ended == "" || strings.Contains(m.Text, g.Ended))
		})
		if !ok {
			return fmt.Sprintf("no band labelled %q (ended %q)", label, g.Ended)
		}
		if !slices.ContainsFunc(v.GrantRows, func(r []string) bool {
			return len(r) > 1 && r[0] == fmt.Sprint(g.Epoch) && r[1] == g.Holder
		}) {
			return fmt.Sprintf("the grant table lacks epoch %d of %s", g.Epoch, g.Holder)
		}
	}
	for _, r := range want.Refusals {
		ok := slices.ContainsFunc(v.Marks, func(m Mark) bool {
			return m.Kind == "refusal" && strings.Contains(m.Title, "Refused write: "+r.Decision) &&
				strings.Contains(m.Title, fmt.Sprintf("presented epoch %d, current epoch %d", r.Presented, r.Current)) &&
				strings.Contains(m.Title, fmt.Sprintf("count %d,", r.Count)) &&
				strings.Contains(m.Text, fmt.Sprintf("%d→%d %s ×%d", r.Presented, r.Current, r.Decision, r.Count))
		})
		if !ok {
			return fmt.Sprintf("no refusal mark %+v", r)
		}
		if !slices.ContainsFunc(v.RefusalRows, func(row []string) bool {
			return len(row) > 4 && row[2] == r.Decision && row[3] == fmt.Sprintf("%d → %d", r.Presented, r.Current) && row[4] == fmt.Sprint(r.Count)
		}) {
			return fmt.Sprintf("the refusal table lacks %+v", r)
		}
	}
	if want.LockDelay && !slices.ContainsFunc(v.Marks, func(m Mark) bool {
		return m.Kind == "lock-delay" && strings.Contains(m.Text, "lock-delay") && strings.HasPrefix(m.Fill, "url(")
	}) {
		return "no hatched lock-delay band labelled lock-delay"
	}
	for _, u := range want.TraceURLs {
		if !slices.Contains(v.TraceLinks, u) {
			return fmt.Sprintf("trace links %q lack %q", v.TraceLinks, u)
		}
	}
	return ""
}

// SaveScreenshot saves the page as a PNG at $FENCEGW_UI_SCREENSHOT,
// or in the test's temporary directory.
func SaveScreenshot(t *testing.T, b *testbrowser.Browser) {
	t.Helper()
	path := os.Getenv("FENCEGW_UI_SCREENSHOT")
	if path == "" {
		path = filepath.Join(t.TempDir(), "timeline.png")
	}
	if err := b.Screenshot(b.ContextFor(t, 20*time.Second), path); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	t.Logf("screenshot: %s", path)
}
