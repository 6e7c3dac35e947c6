package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/fencegw/fencegw/internal/testutil/testspec"
	"github.com/fencegw/fencegw/wire"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"golang.org/x/text/unicode/norm"
)

// specPath names the contract every test gateway's traffic is checked
// against, in messages.
const specPath = "openapi.yaml"

// proxiedPath is the path item that stands for every path of the proxy.
const proxiedPath = testspec.ProxiedPath

// loadSpec loads and validates openapi.yaml (see testspec.Load).
var loadSpec = testspec.Load

// specChecker validates what test gateways receive and answer against the
// spec and keeps every violation:
//
//   - on the control API, every request and every response. A request the
//     spec refuses must not be answered with success; a request the spec
//     admits must not be refused as malformed (400). A path the spec does
//     not list must get the NoEndpoint answer, a method it does not list the
//     MethodNotAllowed answer.
//   - on the proxy, every answer the proxy gives itself, that is every
//     application/problem+json response, against the operation of the
//     /{proxied} path item for its method (post for methods OpenAPI cannot
//     name); its status must be one the operation lists. Upstream answers
//     passing through are not the gateway's and are not checked.
type specChecker struct {
	doc     *openapi3.T
	control routers.Router // the control API's paths, any host
	proxied *openapi3.PathItem

	mu         sync.Mutex
	violations []string
	checked    map[string]int // validated exchanges by kind
}

func newSpecChecker() (*specChecker, error) {
	doc, err := loadSpec()
	if err != nil {
		return nil, err
	}
	proxied := doc.Paths.Value(proxiedPath)
	if proxied == nil {
		return nil, fmt.Errorf("%s has no %s path item", specPath, proxiedPath)
	}
	for _, name := range []string{"NoEndpoint", "MethodNotAllowed"} {
		if doc.Components.Responses[name] == nil {
			return nil, fmt.Errorf("%s lacks components.responses.%s", specPath, name)
		}
	}
	// The router gets a copy holding only the control API, matched on any
	// host: test servers listen on random ports.
	ctrl, err := loadSpec()
	if err != nil {
		return nil, err
	}
	ctrl.Paths.Delete(proxiedPath)
	ctrl.Servers = nil
	router, err := gorillamux.NewRouter(ctrl)
	if err != nil {
		return nil, fmt.Errorf("router from %s: %w", specPath, err)
	}
	return &specChecker{doc: doc, control: router, proxied: proxied, checked: map[string]int{}}, nil
}

var specTraffic struct {
	once    sync.Once
	checker *specChecker
	err     error
}

// trafficChecker returns the checker shared by every test gateway.
func trafficChecker(t testing.TB) *specChecker {
	t.Helper()
	specTraffic.once.Do(func() { specTraffic.checker, specTraffic.err = newSpecChecker() })
	if specTraffic.err != nil {
		t.Fatal(specTraffic.err)
	}
	return specTraffic.checker
}

// finishSpecCheck runs after the package's tests: it fails the run if any
// gateway exchange broke the contract.
func finishSpecCheck(code int) int {
	c := specTraffic.checker
	if c == nil {
		return code
	}
	v, checked := c.result()
	if testing.Verbose() || len(v) > 0 {
		fmt.Fprintf(os.Stderr, "openapi.yaml: checked %v\n", checked)
	}
	if len(v) == 0 {
		return code
	}
	fmt.Fprintf(os.Stderr, "FAIL: %d exchanges broke openapi.yaml:\n", len(v))
	for _, s := range v {
		fmt.Fprintf(os.Stderr, "  %s\n", s)
	}
	if code == 0 {
		code = 1
	}
	return code
}

func (c *specChecker) result() ([]string, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	checked := map[string]int{}
	for k, n := range c.checked {
		checked[k] = n
	}
	return append([]string(nil), c.violations...), checked
}

func (c *specChecker) count(kind string) {
	c.mu.Lock()
	c.checked[kind]++
	c.mu.Unlock()
}

func (c *specChecker) violation(test string, r *http.Request, rec *recorder, format string, args ...any) {
	body := strings.TrimSpace(string(rec.body))
	if len(body) > 400 {
		body = body[:400] + "..."
	}
	s := fmt.Sprintf("%s: %s %s -> %d %q: %s; body %s", test, r.Method, r.URL.RequestURI(), rec.status,
		rec.header.Get("Content-Type"), fmt.Sprintf(format, args...), body)
	c.mu.Lock()
	c.violations = append(c.violations, s)
	c.mu.Unlock()
}

// Control wraps a control API handler.
func (c *specChecker) Control(test string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Control API bodies are small; keep a copy to validate.
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &recorder{ResponseWriter: w, capture: func(http.Header) bool { return true }}
		h.ServeHTTP(rec, r)
		rec.finish()
		if err != nil {
			return // the client went away mid-body; nothing was answered
		}
		c.checkControl(test, r, body, rec)
	})
}

// Proxy wraps a proxy handler.
func (c *specChecker) Proxy(test string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w, capture: isProblem}
		h.ServeHTTP(rec, r)
		rec.finish()
		if rec.captured {
			c.checkProxy(test, r, rec)
		}
	})
}

func isProblem(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == wire.ProblemContentType
}

// An event stream's body is validated as the string openapi.yaml says it
// is (the library knows no text/event-stream).
func init() {
	for _, ct := range []string{"text/event-stream", "text/html", "text/css", "text/javascript"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
	}
}

// A Name's format, the one rule of a name no pattern can state (the
// request filter reads only the library's global formats).
func init() {
	openapi3.DefineStringFormatValidator("unicode-nfc", openapi3.NewCallbackValidator(func(s string) error {
		if !norm.NFC.IsNormalString(s) {
			return errors.New("not in Unicode normalization form C")
		}
		return nil
	}))
}

var (
	validateRequestOptions = &openapi3filter.Options{
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, // keys are the gateway's to check
		MultiError:         true,
	}
	validateResponseOptions = &openapi3filter.Options{
		IncludeResponseStatus: true, // a status the operation does not list is a violation
		MultiError:            true,
	}
)

func (c *specChecker) checkControl(test string, r *http.Request, body []byte, rec *recorder) {
	c.count("control")
	ctx := context.Background()
	vr := r.Clone(ctx)
	vr.Body = io.NopCloser(bytes.NewReader(body))
	if vr.Method == http.MethodHead {
		vr.Method = http.MethodGet // HEAD is answered wherever GET is, as GET
	}
	route, params, err := c.control.FindRoute(vr)
	switch {
	case errors.Is(err, routers.ErrPathNotFound):
		c.checkUnrouted(test, r, rec, http.StatusNotFound, "NoEndpoint")
		return
	case errors.Is(err, routers.ErrMethodNotAllowed):
		c.checkUnrouted(test, r, rec, http.StatusMethodNotAllowed, "MethodNotAllowed")
		return
	case err != nil:
		c.violation(test, r, rec, "no route in the spec: %v", err)
		return
	}
	// The router matches the escaped path and hands out its escaped
	// segments; kin-openapi validates them as they are. A path parameter's
	// value is the decoded text (a lease named "x/y" is sent as x%2Fy).
	for k, v := range params {
		if d, err := url.PathUnescape(v); err == nil {
			params[k] = d
		}
	}
	op := route.Operation
	// An unlabelled body is refused (415) before it is read; validate it as
	// the JSON it would have to be, so that the spec judges the body.
	if op.RequestBody != nil && vr.Header.Get("Content-Type") == "" {
		vr.Header.Set("Content-Type", "application/json")
	}
	in := &openapi3filter.RequestValidationInput{Request: vr, PathParams: params, Route: route, Options: validateRequestOptions}
	reqErr := openapi3filter.ValidateRequest(ctx, in)
	// kin-openapi's JSON decoder stops after the first value; a body with
	// trailing data is not application/json.
	if reqErr == nil && op.RequestBody != nil && len(body) > 0 && !json.Valid(body) {
		reqErr = errors.New("the body is not one JSON value")
	}
	// A body naming a member twice, or like one of the schema's but for
	// case, is ambiguous (kin-openapi reads the last of two); the spec says
	// it is refused.
	if reqErr == nil && op.RequestBody != nil && len(body) > 0 {
		if mt := op.RequestBody.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil {
			var names []string
			for name := range mt.Schema.Value.Properties {
				names = append(names, name)
			}
			if err := wire.CheckMembers(body, names...); err != nil {
				reqErr = err
			}
		}
	}
	// kin-openapi reads the query with url.Query, which drops the pairs it
	// cannot decode; a query that does not decode whole is malformed.
	if _, err := url.ParseQuery(vr.URL.RawQuery); reqErr == nil && err != nil {
		reqErr = fmt.Errorf("the query does not decode: %w", err)
	}
	// The audit's endpoints refuse parameters the spec does not list.
	if reqErr == nil && strings.HasPrefix(route.Path, "/v1/audit/") {
		for name := range vr.URL.Query() {
			if op.Parameters.GetByInAndName("query", name) == nil {
				reqErr = fmt.Errorf("query parameter %q is not in the spec", name)
			}
		}
	}
	switch {
	case reqErr != nil && rec.status < 400:
		c.violation(test, r, rec, "the spec refuses the request (%v) but the gateway answered %d", oneLine(reqErr), rec.status)
	case reqErr == nil && rec.status == http.StatusBadRequest && !storeRange(rec):
		c.violation(test, r, rec, "the spec admits the request (body %q) but the gateway refused it as malformed", body)
	}
	in.Request = asGet(r) // ValidateRequest read the body
	c.checkResponse(test, r, in, rec)
}

// checkUnrouted checks an answer to a path or method the spec does not
// list against the response the spec gives for all such requests.
func (c *specChecker) checkUnrouted(test string, r *http.Request, rec *recorder, status int, response string) {
	if rec.status != status {
		c.violation(test, r, rec, "the spec lists no operation here; want the %s answer (%d)", response, status)
		return
	}
	op := &openapi3.Operation{Responses: openapi3.NewResponses(openapi3.WithStatus(status, c.doc.Components.Responses[response]))}
	route := &routers.Route{Spec: c.doc, Path: r.URL.Path, PathItem: &openapi3.PathItem{}, Method: r.Method, Operation: op}
	c.checkResponse(test, r, &openapi3filter.RequestValidationInput{Request: asGet(r), Route: route}, rec)
}

func (c *specChecker) checkProxy(test string, r *http.Request, rec *recorder) {
	c.count("proxy problem")
	op := c.proxied.GetOperation(r.Method)
	if op == nil {
		op = c.proxied.Post // methods OpenAPI 3.1 cannot name
	}
	if op.Responses.Status(rec.status) == nil {
		c.violation(test, r, rec, "the proxy's %s operation lists no %d answer", strings.ToLower(r.Method), rec.status)
		return
	}
	route := &routers.Route{Spec: c.doc, Path: proxiedPath, PathItem: c.proxied, Method: r.Method, Operation: op}
	in := &openapi3filter.RequestValidationInput{Request: asGet(r), Route: route,
		PathParams: map[string]string{"proxied": strings.TrimPrefix(r.URL.Path, "/")}}
	c.checkResponse(test, r, in, rec)
}

func (c *specChecker) checkResponse(test string, r *http.Request, in *openapi3filter.RequestValidationInput, rec *recorder) {
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: rec.status, Header: rec.header,
		Options: validateResponseOptions}
	out.SetBodyBytes(rec.body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		c.violation(test, r, rec, "response: %v", oneLine(err))
		return
	}
	if ref := in.Route.Operation.Responses.Status(rec.status); ref != nil && ref.Value != nil &&
		len(ref.Value.Content) == 0 && len(rec.body) > 0 {
		c.violation(test, r, rec, "the spec documents no body for %d", rec.status)
	}
}

// asGet returns a copy of r without its body, a HEAD turned into a GET:
// ValidateResponse skips HEAD answers, and the handler wrote the body the
// client of a HEAD does not get, so it is checked as GET's.
func asGet(r *http.Request) *http.Request {
	g := r.Clone(context.Background())
	if g.Method == http.MethodHead {
		g.Method = http.MethodGet
	}
	g.Body = http.NoBody
	return g
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// recorder passes a response through, keeping its status, its header as
// sent, and its body when capture says so. Unwrap lets
// http.ResponseController reach the server's writer (flushes, deadlines).
type recorder struct {
	http.ResponseWriter
	capture  func(http.Header) bool
	status   int
	header   http.Header
	captured bool
	body     []byte
}

func (rec *recorder) WriteHeader(code int) {
	if rec.status == 0 && code >= 200 {
		rec.status = code
		rec.header = rec.ResponseWriter.Header().Clone()
		rec.captured = rec.capture(rec.header)
	}
	rec.ResponseWriter.WriteHeader(code)
}

func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.WriteHeader(http.StatusOK)
	}
	n, err := rec.ResponseWriter.Write(b)
	if rec.captured {
		rec.body = append(rec.body, b[:n]...) // what the server took: none on a 204
	}
	return n, err
}

func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// finish records what the server sends for a handler that wrote nothing.
func (rec *recorder) finish() {
	if rec.status == 0 {
		rec.status = http.StatusOK
		rec.header = rec.ResponseWriter.Header().Clone()
		rec.captured = rec.capture(rec.header)
	}
}

// TestSpecCheckerCatchesViolations makes sure the traffic check is not
// vacuous: wrong answers and wrongly accepted requests are caught, right
// ones and upstream answers are not.
func TestSpecCheckerCatchesViolations(t *testing.T) {
	problem := func(status int, body string, header ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			for i := 0; i+1 < len(header); i += 2 {
				w.Header().Set(header[i], header[i+1])
			}
			w.Header().Set("Content-Type", wire.ProblemContentType)
			w.WriteHeader(status)
			io.WriteString(w, body)
		}
	}
	answer := func(status int, contentType, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			if contentType != "" {
				w.Header().Set("Content-Type", contentType)
			}
			w.WriteHeader(status)
			io.WriteString(w, body)
		}
	}
	const (
		lease     = `{"name":"a","holder":"h","epoch":"1","expires_at":"2026-01-01T00:00:00Z","ttl_seconds":5,"held":true}`
		stale     = `{"type":"urn:fencegw:problem:stale-epoch","title":"t","status":412,"route":"/r/","resource":"r","presented_epoch":"1","current_epoch":"2"}`
		held      = `{"type":"urn:fencegw:problem:lease-held","title":"t","status":409,"lease":"a","holder":"b","expires_at":"2026-01-01T00:00:00Z","current_epoch":"3"}`
		exhausted = `{"type":"urn:fencegw:problem:epoch-exhausted","title":"t","status":409,"lease":"a","current_epoch":"9223372036854775807"}`
		owned     = `{"type":"urn:fencegw:problem:lease-owned","title":"t","status":403,"lease":"a","owner":"key-one"}`
	)
	cases := []struct {
		name          string
		proxy         bool
		handler       http.Handler
		method, path  string
		body          string
		wantViolation string // "" for none
	}{
		{"right fence answer", false, answer(200, "application/json", `{"resource":"x","epoch":"3"}`), "GET", "/v1/fences/x", "", ""},
		{"fence answer without epoch", false, answer(200, "application/json", `{"resource":"x"}`), "GET", "/v1/fences/x", "", "response body doesn't match"},
		{"fence answer as text", false, answer(200, "text/plain", `3`), "GET", "/v1/fences/x", "", "Content-Type"},
		{"undocumented status", false, problem(418, `{"type":"urn:fencegw:problem:internal","title":"t","status":418}`), "GET", "/v1/fences/x", "", "status is not supported"},
		{"lease 404 of the wrong type", false, problem(404, `{"type":"urn:fencegw:problem:bad-request","title":"t","status":404,"lease":"a"}`), "GET", "/v1/leases/a", "", "response body doesn't match"},
		{"problem status unlike the response's", false, problem(404, `{"type":"urn:fencegw:problem:not-found","title":"t","status":400,"lease":"a"}`), "GET", "/v1/leases/a", "", "response body doesn't match"},
		{"unknown problem member type", false, problem(404, `{"type":"urn:fencegw:problem:not-found","title":"t","status":404,"lease":7}`), "GET", "/v1/leases/a", "", "response body doesn't match"},
		{"503 without Retry-After", false, problem(503, `{"type":"urn:fencegw:problem:store-unavailable","title":"t","status":503,"lease":"a"}`), "GET", "/v1/leases/a", "", "Retry-After"},
		{"409 with Retry-After", false, problem(409, held, "Retry-After", "3"), "POST", "/v1/leases/a/acquire", `{"holder":"b","ttl_seconds":5}`, ""},
		{"409 lease-held on renew", false, problem(409, held, "Retry-After", "3"), "POST", "/v1/leases/a/renew", `{"holder":"b","epoch":1}`, "response body doesn't match"},
		{"409 epoch-exhausted", false, problem(409, exhausted), "POST", "/v1/leases/a/acquire", `{"holder":"b","ttl_seconds":5}`, ""},
		{"403 lease-owned", false, problem(403, owned), "POST", "/v1/leases/a/release", `{"holder":"b","epoch":1}`, ""},
		{"403 lease-owned without owner", false, problem(403, strings.Replace(owned, `,"owner":"key-one"`, "", 1)), "POST", "/v1/leases/a/renew", `{"holder":"b","epoch":1}`, "response body doesn't match"},
		{"403 lease-owned on GET", false, problem(403, owned), "GET", "/v1/leases/a", "", "response body doesn't match"},
		{"bad request accepted", false, answer(204, "", ""), "POST", "/v1/leases/a/release", `{"holder":"a","epoch":0}`, "the spec refuses the request"},
		{"trailing data accepted", false, answer(200, "application/json", lease), "POST", "/v1/leases/a/renew", `{"holder":"a","epoch":1} {}`, "the spec refuses the request"},
		{"good request refused", false, problem(400, `{"type":"urn:fencegw:problem:bad-request","title":"t","status":400}`), "POST", "/v1/leases/a/renew", `{"holder":"a","epoch":1}`, "the spec admits the request"},
		{"204 with a body", false, answer(204, "application/json", `{}`), "POST", "/v1/leases/a/release", `{"holder":"a","epoch":1}`, ""}, // net/http drops it
		{"unknown path answered", false, answer(200, "application/json", `{}`), "GET", "/v2/nothing", "", "NoEndpoint"},
		{"wrong method answered 404", false, problem(404, `{"type":"urn:fencegw:problem:not-found","title":"t","status":404}`), "DELETE", "/healthz", "", "MethodNotAllowed"},
		{"wrong method answered 405", false, problem(405, `{"type":"urn:fencegw:problem:method-not-allowed","title":"t","status":405}`), "DELETE", "/healthz", "", ""},
		{"proxy: right 412", true, problem(412, stale), "POST", "/r/x", "", ""},
		{"proxy: 412 without current_epoch (a raw epoch's)", true, problem(412, strings.Replace(stale, `,"current_epoch":"2"`, "", 1)), "POST", "/r/x", "", ""},
		{"proxy: 412 without presented_epoch", true, problem(412, strings.Replace(stale, `,"presented_epoch":"1"`, "", 1)), "POST", "/r/x", "", "response body doesn't match"},
		{"proxy: 503 without Retry-After", true, problem(503, `{"type":"urn:fencegw:problem:store-unavailable","title":"t","status":503,"route":"/r/","resource":"r","presented_epoch":"1"}`), "POST", "/r/x", "", "Retry-After"},
		{"proxy: undocumented problem status", true, problem(410, strings.Replace(held, "409", "410", 1)), "POST", "/r/x", "", "lists no 410 answer"},
		{"proxy: custom method is post", true, problem(412, stale), "PURGE", "/r/x", "", ""},
		{"proxy: HEAD problem", true, problem(404, `{"type":"urn:fencegw:problem:no-route","title":"t","status":400}`), "HEAD", "/r/x", "", "response body doesn't match"},
		{"proxy: upstream answer not checked", true, answer(500, "text/plain", "upstream broke"), "POST", "/r/x", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := newSpecChecker()
			if err != nil {
				t.Fatal(err)
			}
			h := c.Control(t.Name(), tc.handler)
			if tc.proxy {
				h = c.Proxy(t.Name(), tc.handler)
			}
			srv := newPlainServer(t, h)
			do(t, tc.method, srv+tc.path, map[string]string{"Content-Type": "application/json"}, tc.body)
			v, _ := c.result()
			switch {
			case tc.wantViolation == "" && len(v) > 0:
				t.Fatalf("violations: %v", v)
			case tc.wantViolation != "" && (len(v) != 1 || !strings.Contains(v[0], tc.wantViolation)):
				t.Fatalf("violations %v, want one mentioning %q", v, tc.wantViolation)
			}
		})
	}
}

// TestControlAPIEdgesFollowSpec sends the requests the other tests do not:
// unknown paths, wrong methods, encoded names, bad parameters and HEAD on the
// proxy. The harness checks every answer against the spec.
func TestControlAPIEdgesFollowSpec(t *testing.T) {
	g := newGateway(t, boltFresh(t)(t), newUpstream(t), nil)
	_, before := trafficChecker(t).result()
	defer func() {
		// The harness routed these exchanges through the checker.
		_, after := trafficChecker(t).result()
		if after["control"]-before["control"] < 12 || after["proxy problem"]-before["proxy problem"] < 6 {
			t.Errorf("checked %v before, %v after: the harness does not route traffic through the spec check", before, after)
		}
	}()
	type exchange struct {
		method, path string
		status       int
	}
	// expect sends each exchange to the server at base, with neither
	// header fields nor body, and checks the status.
	expect := func(server, base string, exchanges []exchange) {
		for _, c := range exchanges {
			if a := do(t, c.method, base+c.path, nil, ""); a.status != c.status {
				t.Errorf("%s: %s %s = %d %s, want %d", server, c.method, c.path, a.status, a.body, c.status)
			}
		}
	}
	expect("control", g.api.URL, []exchange{
		{"GET", "/v2/nothing", 404},
		{"DELETE", "/healthz", 405},
		{"HEAD", "/readyz", 200}, // HEAD is answered wherever GET is
		{"GET", "/v1/leases/a/acquire", 405},
		{"PUT", "/v1/fences/x", 405},
		{"GET", "/v1/leases/x%2Fy", 404},
		{"GET", "/v1/leases/a%09b", 400},
		{"GET", "/v1/fences/a%09b", 400},
		{"GET", "/v1/audit/rejections?limit=abc", 400},
		{"GET", "/v1/audit/rejections?limit=10001", 400},
		{"GET", "/v1/audit/rejections?limit=3&resource=x", 200},
		{"GET", "/.well-known/jwks.json", 200},
	})
	expect("proxy", g.proxy.URL, []exchange{
		{"HEAD", "/nowhere", 404},
		{"OPTIONS", "/nowhere", 404},
		{"TRACE", "/nowhere", 404},
		{"PUT", "/email/x", 428},
		{"PATCH", "/email/x", 428},
		{"DELETE", "/email/x", 428},
	})
}

// newPlainServer serves h for one test.
func newPlainServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// storeRange reports whether rec refuses a lease parameter outside the
// narrower range of the store behind the gateway (tokens.TTLLimiter: etcd
// keeps whole seconds from 2), which the spec describes but cannot state
// as a schema.
func storeRange(rec *recorder) bool {
	return strings.Contains(string(rec.body), "seconds on this store")
}
