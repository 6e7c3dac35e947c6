package testbrowser_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fencegw/fencegw/internal/testutil/testbrowser"
)

// TestBrowserSeesWhatAPageDoes: the recorder must catch what the page tests
// assert never happens — a request to another origin, a script error, a
// CSP violation — or their assertions prove nothing.
func TestBrowserSeesWhatAPageDoes(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer other.Close()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/loose":
			fmt.Fprintf(w, `<!doctype html><title>loose</title><img src="%s/pixel.png">
<script>console.error("boom"); null.x;</script>`, other.URL)
		case "/strict":
			w.Header().Set("Content-Security-Policy", "default-src 'self'")
			fmt.Fprint(w, `<!doctype html><title>strict</title><script>document.title = "ran"</script>`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer page.Close()

	b := testbrowser.Start(t)
	ctx := b.Context()
	for _, p := range []string{"/loose", "/strict"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(page.URL+p)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // the last events arrive after the load
	if title, err := chromedp.Run(ctx, chromedp.Title()); err != nil || title != "strict" {
		t.Errorf("title %q (%v): the inline script ran despite the CSP", title, err)
	}

	if out := b.RequestsOutside(page.URL); !slices.Equal(out, []string{"GET " + other.URL + "/pixel.png"}) {
		t.Errorf("requests outside %s: %q", page.URL, out)
	}
	if len(b.RequestsOutside(other.URL)) < 2 {
		t.Errorf("the page's own requests were not recorded: %v", b.Requests())
	}
	problems := strings.Join(b.Problems(), "\n")
	for _, want := range []string{"console.error: boom", "uncaught exception", "Content Security Policy"} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems lack %q:\n%s", want, problems)
		}
	}
}

func TestFindChromium(t *testing.T) {
	t.Setenv("FENCEGW_CHROMIUM", "/nonexistent/chromium")
	if _, err := testbrowser.FindChromium(); err == nil {
		t.Error("FENCEGW_CHROMIUM naming no file was accepted")
	}
}
