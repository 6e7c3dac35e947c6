package ui_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/gateway/ui"

	"github.com/fencegw/fencegw/wire"
)

// TestUIServesItsAssets checks every asset's media type and headers, the
// trace URL template in config.json, and 404 for anything else.
func TestUIServesItsAssets(t *testing.T) {
	const traceURL = "https://tracing.example/trace/{trace_id}"
	h := ui.NewUI(traceURL)
	for _, c := range []struct{ path, contentType, contains string }{
		{"/ui/", "text/html; charset=utf-8", `<script src="app.js" defer></script>`},
		{"/ui/app.js", "text/javascript; charset=utf-8", "function grantsOf("},
		{"/ui/style.css", "text/css; charset=utf-8", "rect.lock-delay"},
		{"/ui/config.json", "application/json", `{"trace_url":"https://tracing.example/trace/{trace_id}"}`},
	} {
		t.Run(c.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, c.path, nil))
			res := rec.Result()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", res.StatusCode, body)
			}
			for k, want := range map[string]string{
				"Content-Type":            c.contentType,
				"Cache-Control":           "no-cache",
				"X-Content-Type-Options":  "nosniff",
				"Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
			} {
				if got := res.Header.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			if !strings.Contains(string(body), c.contains) {
				t.Errorf("body lacks %q", c.contains)
			}
			// HEAD: the same headers, no body.
			rec = httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, c.path, nil))
			if rec.Code != http.StatusOK || rec.Body.Len() != 0 || rec.Header().Get("Content-Type") != c.contentType {
				t.Errorf("HEAD: status %d, %d body bytes, type %q", rec.Code, rec.Body.Len(), rec.Header().Get("Content-Type"))
			}
		})
	}
}

// TestUIConfigWithoutTraceURL: an empty template is served as "" (trace
// ids shown as text).
func TestUIConfigWithoutTraceURL(t *testing.T) {
	rec := httptest.NewRecorder()
	ui.NewUI("").ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ui/config.json", nil))
	var cfg map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &cfg); err != nil {
		t.Fatalf("config.json: %v: %s", err, rec.Body)
	}
	if v, ok := cfg["trace_url"]; !ok || v != "" || len(cfg) != 1 {
		t.Errorf("config.json = %s, want {\"trace_url\":\"\"}", rec.Body)
	}
}

// TestUIRefusesOtherPathsAndMethods: only the four assets exist, read-only.
func TestUIRefusesOtherPathsAndMethods(t *testing.T) {
	h := ui.NewUI("")
	for _, p := range []string{"/ui/index.html", "/ui/ui/app.js", "/ui/../ui/app.js", "/ui/app.js/", "/ui/APP.JS", "/ui/missing.png", "/ui", "/app.js", "/ui/.."} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://gw"+p, nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", p, rec.Code)
		}
		if ct := rec.Header().Get("Content-Type"); ct != wire.ProblemContentType {
			t.Errorf("GET %s: Content-Type %q, want a problem document", p, ct)
		}
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(m, "/ui/", nil))
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /ui/: status %d, Allow %q", m, rec.Code, rec.Header().Get("Allow"))
		}
	}
}

// TestUIAssetsLoadNothingFromElsewhere: no absolute URL to another origin,
// no inline script or style (the CSP would block them), no HTML from data.
func TestUIAssetsLoadNothingFromElsewhere(t *testing.T) {
	h := ui.NewUI("")
	for _, p := range []string{"/ui/", "/ui/app.js", "/ui/style.css"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
		// The SVG namespace URI is a name, not a request.
		body := strings.ReplaceAll(rec.Body.String(), "http://www.w3.org/2000/svg", "")
		for _, bad := range []string{"https://", "http://", "//cdn", "@import", "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "style=\"", "<style", "onclick=", "onload="} {
			if strings.Contains(body, bad) {
				t.Errorf("%s contains %q", p, bad)
			}
		}
		if p == "/ui/" && strings.Count(body, "<script") != 1 {
			t.Errorf("index.html has inline scripts")
		}
	}
}
