package ui

import (
	"embed"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/fencegw/fencegw/gateway/problem"
)

// uiFiles are the leader-timeline page's static assets: plain HTML, CSS and
// JavaScript, nothing fetched from elsewhere.
//
//go:embed index.html app.js style.css
var uiFiles embed.FS

// UIContentSecurityPolicy is sent with every page asset: the page loads its
// script, style and data from the control API's own origin only, runs no
// inline script or style, and may not be framed.
const UIContentSecurityPolicy = "default-src 'self'; img-src 'self' data:; style-src 'self'; " +
	"script-src 'self'; connect-src 'self'; frame-ancestors 'none'"

// uiAssets maps the page's paths under /ui/ to their file and media type.
var uiAssets = map[string]struct{ file, contentType string }{
	"":          {"index.html", "text/html; charset=utf-8"},
	"app.js":    {"app.js", "text/javascript; charset=utf-8"},
	"style.css": {"style.css", "text/css; charset=utf-8"},
}

// NewUI returns the handler of the leader-timeline page, a read-only view of
// the audit for operators. It expects requests with their full path, as when
// mounted on the control router at /ui/*:
//
//	GET /ui/             the page (index.html)
//	GET /ui/app.js       its script
//	GET /ui/style.css    its style sheet
//	GET /ui/config.json  {"trace_url": traceURL}: the page links trace ids
//	                     through it ("" shows them as text)
//
// Any other path answers 404 and any method but GET and HEAD 405, as problem
// documents. Every asset is sent with Cache-Control: no-cache,
// X-Content-Type-Options: nosniff, Referrer-Policy: no-referrer and the
// Content-Security-Policy UIContentSecurityPolicy.
//
// The assets hold no data and no secret, so they need no API key. The page
// reads the audit (GET /v1/audit/leases, /v1/audit/rejections) and the live
// state (GET /v1/leases/{name}, /v1/fences/{resource}) from the same origin,
// every 2 seconds; when those answer 401 or 403 it asks the operator for an
// admin API key, which it keeps in the tab's sessionStorage and sends as
// Authorization: Bearer.
//
// traceURL is a template the configuration checked (ui.trace_url: empty,
// or an absolute http(s) URL with {trace_id} in it); the page links only
// http and https URLs whatever it holds.
func NewUI(traceURL string) http.Handler {
	config, err := json.Marshal(struct {
		TraceURL string `json:"trace_url"`
	}{traceURL})
	if err != nil {
		panic("gateway.NewUI: " + err.Error())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			problem.WriteError(w, r, problem.Refuse(problem.KindNotAllowed, r.Method+" is not allowed on "+r.URL.Path+"; allowed: GET, HEAD"))
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, "/ui/")
		if !ok {
			problem.WriteError(w, r, problem.Refuse(problem.KindNotFound, "no page at "+r.URL.Path))
			return
		}
		var body []byte
		contentType := "application/json"
		if name == "config.json" {
			body = config
		} else if a, ok := uiAssets[name]; ok {
			// The embedded files are fixed at build time: reading one
			// cannot fail.
			body, _ = uiFiles.ReadFile(a.file)
			contentType = a.contentType
		} else {
			problem.WriteError(w, r, problem.Refuse(problem.KindNotFound, "no page at "+r.URL.Path))
			return
		}
		h := w.Header()
		h.Set("Content-Type", contentType)
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Security-Policy", UIContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			w.Write(body)
		}
	})
}
