package gateway_test

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/wire"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/server"
	"github.com/fencegw/fencegw/tokens"
)

// The edge invariant: every request the upstream receives was admitted for
// exactly the resource and epoch it carries, as the upstream itself reads
// them, and its path is inside its route. The property test and the fuzz
// target send requests as raw bytes over TCP through the gateway served as
// fencegw serve serves it (server.Serve: the framing guard in front), to a
// recording upstream: any method case, method overrides, dotted, encoded,
// doubled and trailing-slash paths, prefixes with and without a slash,
// stripping on and off, resource headers repeated, twinned and listed in
// Connection, forged fencing headers, and framing tricks.
//
// Each request is checked twice. From the upstream's side alone, every
// request it received must be one the fence admitted as the upstream reads
// it. From the sending side, a model of the HTTP contract, written here
// independently of the gateway's code, predicts from the bytes sent what
// the gateway must do: refuse (and with which status) or forward, to which
// upstream path, as which resource and epoch. The property test holds the
// gateway to the model exactly; the fuzz target, whose framing bytes the
// model cannot judge, holds it to the model's refusals and to what it
// forwards.

// edgeRoute is one route of the edge harness, how the model names a
// write's resource from what was sent, and how its upstream reads the
// resource back from what it received.
type edgeRoute struct {
	prefix, resource, base string // base: the upstream path the route sends to
	strip                  bool
	methods                []string
	// name names the resource from the request as sent, given the decoded
	// path below the prefix; ok false when it cannot be named.
	name func(sub string, v *sentView) (string, bool)
	// read names the resource from the upstream's view of the request,
	// given the escaped path below base; ok false when it cannot. Nil: the
	// upstream reads the gateway's Fencing-Resource header.
	read func(sub string, h http.Header) (string, bool)
}

var edgeRoutes = []edgeRoute{
	{prefix: "/tenants", resource: "tenant-{segment:1}", base: "/r1", strip: true, name: segmentOf(1, "tenant-"),
		read: func(sub string, _ http.Header) (string, bool) { return segmentAsMux(sub, 1, "tenant-") }},
	{prefix: "/docs/", resource: "doc-{segment:1}", base: "/r2", name: segmentOf(1, "doc-"),
		read: func(sub string, _ http.Header) (string, bool) {
			return segmentAsMux(strings.TrimPrefix(sub, "/docs"), 1, "doc-")
		}},
	{prefix: "/hdr/", resource: "t-{header:X-Tenant}", base: "/r3", strip: true, name: headerOf("X-Tenant", "t-"),
		read: func(_ string, h http.Header) (string, bool) { return headerAsLenient(h, "X-Tenant", "t-") }},
	{prefix: "/any/", base: "/r4", name: headerOf(gateway.ResourceHeader, "")},
	{prefix: "/m/", resource: "m-fixed", base: "/r5", methods: []string{"POST"}, name: fixedName("m-fixed"),
		read: func(string, http.Header) (string, bool) { return "m-fixed", true }},
	// A prefix without its trailing slash, not stripped.
	{prefix: "/orders", resource: "order-{segment:1}", base: "/r6", name: segmentOf(1, "order-"),
		read: func(sub string, _ http.Header) (string, bool) {
			return segmentAsMux(strings.TrimPrefix(sub, "/orders"), 1, "order-")
		}},
	// A route fencing only DELETE: a POST passes unfenced, so a POST
	// claiming to be a DELETE must not.
	{prefix: "/d/", resource: "d-fixed", base: "/r7", methods: []string{"DELETE"}, name: fixedName("d-fixed"),
		read: func(string, http.Header) (string, bool) { return "d-fixed", true }},
}

// fenced reports whether the route fences method (the model's rule: every
// method but GET, HEAD and OPTIONS, or the route's own list).
func (er *edgeRoute) fenced(method string) bool {
	if er.methods != nil {
		return slices.Contains(er.methods, method)
	}
	return method != "GET" && method != "HEAD" && method != "OPTIONS"
}

func segmentOf(n int, lit string) func(string, *sentView) (string, bool) {
	return func(sub string, _ *sentView) (string, bool) {
		segs := strings.Split(strings.TrimPrefix(sub, "/"), "/")
		if len(segs) < n || segs[n-1] == "" {
			return "", false
		}
		return lit + segs[n-1], true
	}
}

func fixedName(name string) func(string, *sentView) (string, bool) {
	return func(string, *sentView) (string, bool) { return name, true }
}

// headerOf names the resource from header name as sent: exactly one field
// line in any spelling that folds to name, without "_" (a twin), with a
// non-empty value holding no comma, and not listed in Connection.
func headerOf(name, lit string) func(string, *sentView) (string, bool) {
	key := foldName(name)
	return func(_ string, v *sentView) (string, bool) {
		var vals []string
		for _, f := range v.fields {
			if foldName(f[0]) != key {
				continue
			}
			if strings.Contains(f[0], "_") {
				return "", false
			}
			vals = append(vals, f[1])
		}
		if len(vals) != 1 || vals[0] == "" || strings.Contains(vals[0], ",") {
			return "", false
		}
		for _, c := range v.values("Connection") {
			for _, tok := range strings.Split(c, ",") {
				if foldName(strings.Trim(tok, " \t")) == key {
					return "", false
				}
			}
		}
		return lit + vals[0], true
	}
}

func foldName(s string) string { return strings.ReplaceAll(strings.ToLower(s), "_", "-") }

// segmentAsMux reads the nth segment of an escaped path as a Go 1.22
// ServeMux wildcard does: split on "/" first, then unescape the segment.
func segmentAsMux(escaped string, n int, prefix string) (string, bool) {
	segs := strings.Split(strings.TrimPrefix(escaped, "/"), "/")
	if len(segs) < n || segs[n-1] == "" {
		return "", false
	}
	v, err := url.PathUnescape(segs[n-1])
	if err != nil {
		return "", false
	}
	return prefix + v, true
}

// headerAsLenient reads a header as the most lenient server might: any
// spelling that folds to the same name counts, and a list is ambiguous.
func headerAsLenient(h http.Header, name, prefix string) (string, bool) {
	var vals []string
	for k, v := range h {
		if foldName(k) == foldName(name) {
			vals = append(vals, v...)
		}
	}
	if len(vals) != 1 || strings.Contains(vals[0], ",") {
		return "", false
	}
	return prefix + vals[0], true
}

// sentView is a request as the model reads the bytes sent: the request
// line and the field lines of the head.
type sentView struct {
	method, target string
	fields         [][2]string // name as sent, value without surrounding whitespace
}

// values returns the values of the field lines named name, in any case
// (as Go's server would file them under one canonical name).
func (v *sentView) values(name string) []string {
	var out []string
	for _, f := range v.fields {
		if strings.EqualFold(f[0], name) {
			out = append(out, f[1])
		}
	}
	return out
}

// parseHead reads the head of raw strictly by RFC 9112: a request line and
// field lines "token: value", each ended by CRLF, values free of controls
// but HTAB, up to an empty line. ok is false for anything else (a bare LF
// or CR, obs-fold, a space before the colon, no end of head): such a
// request must never be forwarded.
func parseHead(raw string) (v sentView, ok bool) {
	end := strings.Index(raw, "\r\n\r\n")
	if end < 0 {
		return v, false
	}
	lines := strings.Split(raw[:end], "\r\n")
	parts := strings.Split(lines[0], " ")
	if len(parts) != 3 || parts[2] != "HTTP/1.1" || !isToken(parts[0]) || parts[1] == "" {
		return v, false
	}
	v.method, v.target = parts[0], parts[1]
	for _, l := range lines[1:] {
		name, value, found := strings.Cut(l, ":")
		if !found || !isToken(name) {
			return v, false
		}
		for i := 0; i < len(value); i++ {
			if c := value[i]; (c < 0x20 && c != '\t') || c == 0x7f {
				return v, false
			}
		}
		v.fields = append(v.fields, [2]string{name, strings.Trim(value, " \t")})
	}
	return v, true
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return false
		}
	}
	return true
}

// outcome is what the model predicts for a request: refused with status,
// or forwarded to path (escaped) on route, fenced as resource at epoch.
type outcome struct {
	status   int // 0: forwarded
	why      string
	route    *edgeRoute
	path     string
	fenced   bool
	resource string
	epoch    int64
}

func refused(status int, why string) outcome { return outcome{status: status, why: why} }

// predict is the model of the HTTP contract (docs/http-api.md, The HTTP contract):
// what the gateway must do with the request v, given the high-water marks
// hwm. It shares no code with the gateway but the definition of a valid
// resource name and of a raw epoch.
func predict(v *sentView, hwm map[string]int64) outcome {
	if strings.ToUpper(v.method) != v.method {
		return refused(400, "method not upper case")
	}
	for _, f := range v.fields {
		switch foldName(f[0]) {
		case "x-http-method-override", "x-http-method", "x-method-override":
			return refused(400, "method override header")
		}
	}
	target := v.target
	if strings.HasPrefix(target, "http://gw/") {
		target = strings.TrimPrefix(target, "http://gw")
	}
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return refused(400, "unparsable target")
	}
	rawPath, rawQuery, _ := strings.Cut(target, "?")
	for _, kv := range strings.FieldsFunc(rawQuery, func(r rune) bool { return r == '&' || r == ';' }) {
		k, _, _ := strings.Cut(kv, "=")
		if k, err := url.QueryUnescape(k); err == nil && strings.ToLower(k) == "_method" {
			return refused(400, "_method query parameter")
		}
	}
	for _, enc := range []string{"%2f", "%5c", "%2e"} {
		if strings.Contains(strings.ToLower(rawPath), enc) {
			return refused(400, "encoded separator or dot")
		}
	}
	p := u.Path
	if !strings.HasPrefix(p, "/") || strings.Contains(p, "//") || strings.ContainsAny(p, ";\\") {
		return refused(400, "unclean path")
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return refused(400, "dot segment")
		}
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] == 0x7f {
			return refused(400, "control character in path")
		}
	}
	er, sub := matchModel(p)
	if er == nil {
		return refused(404, "no route")
	}
	up := p
	if er.strip {
		up = sub
	}
	o := outcome{route: er, path: (&url.URL{Path: er.base + up}).EscapedPath()}
	if !er.fenced(v.method) {
		return o
	}
	o.fenced = true
	toks := v.values(gateway.TokenHeader)
	switch {
	case len(toks) == 0 || toks[0] == "":
		return refused(428, "no token")
	case len(toks) > 1:
		return refused(400, "two tokens")
	}
	if o.epoch, err = tokens.ParseEpoch(toks[0]); err != nil {
		return refused(400, "bad epoch")
	}
	name, ok := er.name(sub, v)
	if !ok || tokens.ValidateResource(name) != nil {
		return refused(400, "no resource")
	}
	o.resource = name
	if o.epoch < hwm[name] {
		return refused(412, "stale")
	}
	return o
}

// matchModel finds the route serving the decoded path p, longest prefix
// first, a prefix matching only at a segment boundary, and the path below
// its prefix.
func matchModel(p string) (*edgeRoute, string) {
	var best *edgeRoute
	var bestSub string
	for i := range edgeRoutes {
		er := &edgeRoutes[i]
		var sub string
		switch {
		case strings.HasSuffix(er.prefix, "/") && strings.HasPrefix(p, er.prefix):
			sub = p[len(er.prefix)-1:]
		case !strings.HasSuffix(er.prefix, "/") && p == er.prefix:
			sub = "/"
		case !strings.HasSuffix(er.prefix, "/") && strings.HasPrefix(p, er.prefix+"/"):
			sub = p[len(er.prefix):]
		default:
			continue
		}
		if best == nil || len(er.prefix) > len(best.prefix) {
			best, bestSub = er, sub
		}
	}
	return best, bestSub
}

// receipt is one request as the recording upstream received it.
type receipt struct {
	id, method, escapedPath, rawQuery string
	header, trailer                   http.Header
	body                              string
	whole                             bool // its body arrived whole
}

// edgeHarness is a gateway on an embedded store served by server.Serve on
// loopback TCP (the framing guard in front, as fencegw serve runs it), with
// a recording upstream.
type edgeHarness struct {
	proxyAddr string
	mu        sync.Mutex
	got       []*receipt
	byID      map[string][]*receipt
	seen      int              // receipts checked from the upstream's side
	upHWM     map[string]int64 // the highest epoch received per resource
	hwm       map[string]int64 // the model's: the highest epoch admitted per resource
	partial   int              // receipts whose body was cut off
}

func newEdgeHarness(tb testing.TB) *edgeHarness {
	tb.Helper()
	h := &edgeHarness{byID: map[string][]*receipt{}, upHWM: map[string]int64{}, hwm: map[string]int64{}}
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := &receipt{id: r.Header.Get("X-Edge-Id"), method: r.Method, escapedPath: r.URL.EscapedPath(),
			rawQuery: r.URL.RawQuery, header: r.Header.Clone()}
		h.mu.Lock()
		h.got = append(h.got, rc)
		h.byID[rc.id] = append(h.byID[rc.id], rc)
		h.mu.Unlock()
		body, err := io.ReadAll(r.Body)
		h.mu.Lock()
		rc.body, rc.whole, rc.trailer = string(body), err == nil, r.Trailer.Clone()
		h.mu.Unlock()
		w.Header().Set("X-Upstream", "yes")
		w.WriteHeader(http.StatusCreated)
	})}
	upLn := listenLoopback(tb)
	go up.Serve(upLn)
	tb.Cleanup(func() { up.Close() })
	upURL := "http://" + upLn.Addr().String()

	c := embeddedConfig(tb)
	c.MaxBodyBytes = 1 << 20
	for _, er := range edgeRoutes {
		c.Routes = append(c.Routes, config.Route{Prefix: er.prefix, Upstream: upURL + er.base, StripPrefix: er.strip,
			Tokens: config.TokensRaw, Methods: er.methods, Resource: er.resource})
	}
	s := assemble(tb, c, server.Options{})
	ls := server.Listeners{Proxy: listenLoopback(tb), Control: listenLoopback(tb)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ls, nil) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("serve: %v", err)
		}
	})
	h.proxyAddr = ls.Proxy.Addr().String()
	return h
}

// edgeFraming is how a generated request frames its body: the field lines
// it adds to the head, the bytes after the head, what the upstream must
// receive as the body, and the status a violation must get (0: none).
type edgeFraming struct {
	name   string
	head   []string
	body   string
	want   string
	status int
}

const chunked = "Transfer-Encoding: chunked"

var (
	okFramings = []edgeFraming{
		{name: "length", head: []string{"Content-Length: 4"}, body: "body", want: "body"},
		{name: "none", want: ""},
		{name: "chunked", head: []string{chunked}, body: "4\r\nbody\r\n0\r\n\r\n", want: "body"},
		{name: "chunked in two, extension, Chunked", head: []string{"Transfer-Encoding: Chunked"},
			body: "2;x=y\r\nbo\r\n02\r\ndy\r\n0\r\n\r\n", want: "body"},
		// Trailers are framing-valid; they arrive after the decision, and the
		// upstream must never receive them.
		{name: "chunked with trailers", head: []string{chunked},
			body: "4\r\nbody\r\n0\r\nX-Tenant: 9\r\nFencing-Epoch: 99\r\nX-Later: 1\r\n\r\n", want: "body"},
		{name: "chunked with declared trailers", head: []string{chunked, "Trailer: X-Tenant, Fencing-Epoch"},
			body: "4\r\nbody\r\n0\r\nX-Tenant: 9\r\nFencing-Epoch: 99\r\n\r\n", want: "body"},
	}
	badFramings = []edgeFraming{
		{name: "Content-Length with Transfer-Encoding", head: []string{"Content-Length: 4", chunked}, body: "4\r\nbody\r\n0\r\n\r\n", status: 400},
		{name: "Transfer-Encoding with Content-Length", head: []string{chunked, "Content-Length: 14"}, body: "4\r\nbody\r\n0\r\n\r\n", status: 400},
		{name: "duplicate Content-Length", head: []string{"Content-Length: 4", "Content-Length: 4"}, body: "body", status: 400},
		{name: "differing Content-Lengths", head: []string{"Content-Length: 4", "content-length: 9"}, body: "bodybody1", status: 400},
		{name: "Content-Length list", head: []string{"Content-Length: 4, 4"}, body: "body", status: 400},
		{name: "signed Content-Length", head: []string{"Content-Length: +4"}, body: "body", status: 400},
		{name: "space before colon", head: []string{"Content-Length : 4"}, body: "body", status: 400},
		{name: "bare LF chunk-size line", head: []string{chunked}, body: "4\nbody\r\n0\r\n\r\n", status: 400},
		{name: "bare LF last chunk", head: []string{chunked}, body: "4\r\nbody\r\n0\n\r\n", status: 400},
		{name: "bare LF after chunk data", head: []string{chunked}, body: "4\r\nbody\n0\r\n\r\n", status: 400},
		{name: "chunk longer than its size", head: []string{chunked}, body: "4\r\nbodyX\r\n0\r\n\r\n", status: 400},
		{name: "bad chunk size", head: []string{chunked}, body: "z\r\nbody\r\n0\r\n\r\n", status: 400},
		{name: "obs-fold", head: []string{"Content-Length: 4", "X-Fold: a", " b"}, body: "body", status: 400},
		{name: "obs-fold of the tenant", head: []string{"Content-Length: 4", "X-Tenant: 7", "\t8"}, body: "body", status: 400},
		{name: "bare LF in the head", head: []string{"Content-Length: 4\nX-Tenant: 8"}, body: "body", status: 400},
		{name: "bare CR in the head", head: []string{"Content-Length: 4\rX-Tenant: 8"}, body: "body", status: 400},
		{name: "two Transfer-Encodings", head: []string{chunked, chunked}, body: "4\r\nbody\r\n0\r\n\r\n", status: 400},
		{name: "chunked twice", head: []string{"Transfer-Encoding: chunked, chunked"}, body: "4\r\nbody\r\n0\r\n\r\n", status: 400},
		{name: "chunked, identity", head: []string{"Transfer-Encoding: chunked, identity"}, body: "4\r\nbody\r\n0\r\n\r\n", status: 501},
		{name: "gzip", head: []string{"Transfer-Encoding: gzip"}, body: "body", status: 501},
		{name: "gzip, chunked", head: []string{"Transfer-Encoding: gzip, chunked"}, body: "4\r\nbody\r\n0\r\n\r\n", status: 501},
		{name: "identity", head: []string{"Transfer-Encoding: identity"}, body: "body", status: 501},
		{name: "framing field in the trailers", head: []string{chunked}, body: "4\r\nbody\r\n0\r\nContent-Length: 5\r\n\r\n", status: 400},
		{name: "obs-fold in the trailers", head: []string{chunked}, body: "4\r\nbody\r\n0\r\nX-A: a\r\n b\r\n\r\n", status: 400},
		{name: "bare LF in the trailers", head: []string{chunked}, body: "4\r\nbody\r\n0\r\nX-A: a\n\r\n", status: 400},
	}
)

// edgeRequest is one generated request.
type edgeRequest struct {
	method, target string
	headers        [][2]string // in order, names as sent
	epoch          int64       // 0: no token
	framing        edgeFraming
	// raw, when set, replaces the framing: the bytes after the generated
	// field lines, the end of the head and the body included (the fuzz
	// target's).
	raw string
}

func (r edgeRequest) String() string {
	s := fmt.Sprintf("%s %s %q epoch %d", r.method, r.target, r.headers, r.epoch)
	if r.raw != "" {
		return s + fmt.Sprintf(" then %q", r.raw)
	}
	return s + " framing " + r.framing.name
}

// bytes returns the request as sent, with id in X-Edge-Id.
func (r edgeRequest) bytes(id string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: gw\r\nX-Edge-Id: %s\r\nConnection: close\r\n", r.method, r.target, id)
	if r.epoch > 0 {
		fmt.Fprintf(&b, "%s: %d\r\n", gateway.TokenHeader, r.epoch)
	}
	for _, kv := range r.headers {
		fmt.Fprintf(&b, "%s: %s\r\n", kv[0], kv[1])
	}
	if r.raw != "" {
		b.WriteString(r.raw)
		return b.String()
	}
	for _, l := range r.framing.head {
		b.WriteString(l + "\r\n")
	}
	b.WriteString("\r\n" + r.framing.body)
	return b.String()
}

// send writes raw on a fresh connection and returns the status (0 when no
// answer could be read) and whether the gateway answered itself. Unless
// patient, it closes its side of the connection when no answer has begun
// after a moment: the request may be unfinished, and the gateway waiting
// for the rest of it is right.
func (h *edgeHarness) send(tb testing.TB, raw string, head, patient bool) (int, bool) {
	tb.Helper()
	c, err := net.DialTimeout("tcp", h.proxyAddr, 5*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		tb.Fatal(err)
	}
	br := bufio.NewReader(c)
	if !patient {
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := br.Peek(1); err != nil {
			c.(*net.TCPConn).CloseWrite()
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
	}
	req := &http.Request{Method: "GET"}
	if head {
		req.Method = "HEAD"
	}
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return 0, true // no answer: nothing was forwarded as an admitted write would be answered
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Content-Type") == wire.ProblemContentType || resp.Header.Get("X-Upstream") == ""
}

// mode says how closely check holds the gateway to the model.
type mode int

const (
	exact mode = iota // the property test: the model's outcome, exactly
	safe              // the fuzz target: the model's refusals, and what was forwarded
)

// tally counts the requests a run sent, by what became of them.
type tally struct {
	sent, forwarded, refused int
	byStatus                 map[int]int
	byWhy                    map[string]int
}

// check sends r, then checks every request the upstream received since
// the last check from the upstream's side, and r against the model.
func (h *edgeHarness) check(tb testing.TB, r edgeRequest, m mode, tl *tally) {
	tb.Helper()
	id := newID()
	raw := r.bytes(id)
	// A generated request is whole; the fuzzer's may not be.
	status, own := h.send(tb, raw, r.method == "HEAD", m == exact)
	// The upstream answers before the gateway does, so what it received
	// is recorded; a cut-off body is settled once the gateway answered.
	h.mu.Lock()
	defer h.mu.Unlock()
	h.checkUpstreamSide(tb, r)
	got := h.byID[id]
	var whole []*receipt
	for _, rc := range got {
		if rc.whole {
			whole = append(whole, rc)
		}
	}
	tl.sent++
	if tl.byStatus == nil {
		tl.byStatus, tl.byWhy = map[int]int{}, map[string]int{}
	}
	tl.byStatus[status]++
	if len(whole) > 0 {
		tl.forwarded++
	} else {
		tl.refused++
	}
	if len(got) > len(whole) {
		h.partial++
	}

	v, headOK := parseHead(raw)
	var want outcome
	switch {
	case m == exact && r.framing.status != 0:
		want = refused(r.framing.status, "framing: "+r.framing.name)
	case !headOK:
		want = refused(-1, "head breaks RFC 9112")
	default:
		want = predict(&v, h.hwm)
	}
	tl.byWhy[want.why]++
	if want.status != 0 {
		if len(got) > 0 {
			tb.Fatalf("%v: refused by the model (%s), yet the upstream received it: %+v", r, want.why, *got[0])
		}
		if !own {
			tb.Fatalf("%v: refused by the model (%s), yet answered %d by the upstream", r, want.why, status)
		}
		if m == exact && status != want.status {
			tb.Fatalf("%v: %d, want %d (%s)", r, status, want.status, want.why)
		}
		if m == safe && want.status < 0 && status/100 == 2 {
			tb.Fatalf("%v: %d to a head that breaks RFC 9112", r, status)
		}
		return
	}
	if len(whole) == 0 {
		if m == exact {
			tb.Fatalf("%v: the model forwards it to %s, yet the gateway answered %d and the upstream received %d", r, want.path, status, len(got))
		}
		return
	}
	if len(whole) > 1 {
		tb.Fatalf("%v: the upstream received it %d times", r, len(whole))
	}
	rc := whole[0]
	if own || status != http.StatusCreated {
		tb.Fatalf("%v: the upstream received it, yet the client got %d (own answer %v)", r, status, own)
	}
	if rc.escapedPath != want.path {
		tb.Fatalf("%v: the upstream received path %s, want %s (route %s)", r, rc.escapedPath, want.path, want.route.prefix)
	}
	if rc.method != v.method {
		tb.Fatalf("%v: the upstream received method %s", r, rc.method)
	}
	if m == exact && rc.body != r.framing.want {
		tb.Fatalf("%v: the upstream received body %q, want %q", r, rc.body, r.framing.want)
	}
	for name := range rc.trailer {
		tb.Fatalf("%v: the upstream received the trailer %s %q: trailers arrive after the decision", r, name, rc.trailer[name])
	}
	epochs, resources := rc.header.Values(gateway.EpochHeader), rc.header.Values(gateway.ResourceHeader)
	if !want.fenced {
		if len(epochs) != 0 || len(resources) != 0 {
			tb.Fatalf("%v: an unfenced request reached the upstream with Fencing-Epoch %q, Fencing-Resource %q", r, epochs, resources)
		}
		return
	}
	if len(epochs) != 1 || epochs[0] != strconv.FormatInt(want.epoch, 10) || len(resources) != 1 || resources[0] != want.resource {
		tb.Fatalf("%v: the upstream received Fencing-Epoch %q, Fencing-Resource %q; the model admits %q at %d",
			r, epochs, resources, want.resource, want.epoch)
	}
	h.hwm[want.resource] = want.epoch
}

// checkUpstreamSide checks every request the upstream received since the
// last call, knowing nothing of what was sent: its path is inside a
// route's upstream, clean; its method is upper case and claims no other;
// a write carries exactly the gateway's Fencing-Epoch and Fencing-Resource,
// for the resource the upstream itself reads, at an epoch not below one
// already received for it; anything else carries no fencing header at all.
// The caller holds h.mu.
func (h *edgeHarness) checkUpstreamSide(tb testing.TB, sent edgeRequest) {
	tb.Helper()
	for ; h.seen < len(h.got); h.seen++ {
		got := h.got[h.seen]
		fail := func(format string, args ...any) {
			tb.Helper()
			tb.Fatalf("after %v: the upstream received %s %s (X-Edge-Id %q): %s", sent, got.method, got.escapedPath, got.id, fmt.Sprintf(format, args...))
		}
		er, sub, ok := routeOfUpstream(got.escapedPath)
		if !ok {
			fail("outside every route")
		}
		if err := policy.CheckEscapedPath(got.escapedPath); err != nil {
			fail("%v", err)
		}
		if decoded, err := url.PathUnescape(got.escapedPath); err != nil || policy.CheckPath(decoded) != nil {
			fail("an unclean path")
		}
		if strings.ToUpper(got.method) != got.method {
			fail("a method not upper case")
		}
		for name := range got.header {
			switch foldName(name) {
			case "x-http-method-override", "x-http-method", "x-method-override":
				fail("a method override %s", name)
			}
		}
		if q, err := url.ParseQuery(got.rawQuery); err == nil && q.Has("_method") {
			fail("a _method query parameter")
		}
		var fencing []string
		for name := range got.header {
			if strings.HasPrefix(foldName(name), "fencing-") && name != gateway.EpochHeader && name != gateway.ResourceHeader {
				fencing = append(fencing, name)
			}
		}
		if len(fencing) > 0 {
			fail("the client's fencing headers %q", fencing)
		}
		epochs, resources := got.header.Values(gateway.EpochHeader), got.header.Values(gateway.ResourceHeader)
		if !er.fenced(got.method) {
			if len(epochs)+len(resources) > 0 {
				fail("an unfenced request with Fencing-Epoch %q, Fencing-Resource %q", epochs, resources)
			}
			continue
		}
		if len(epochs) != 1 || len(resources) != 1 {
			fail("a write with Fencing-Epoch %q, Fencing-Resource %q", epochs, resources)
		}
		resource := resources[0]
		if er.read != nil {
			if reads, ok := er.read(sub, got.header); !ok || reads != resource {
				fail("admitted for %q, but the upstream reads resource %q (%v)", resource, reads, ok)
			}
		}
		epoch, err := strconv.ParseInt(epochs[0], 10, 64)
		if err != nil || epoch < h.upHWM[resource] {
			fail("epoch %s of %q after %d", epochs[0], resource, h.upHWM[resource])
		}
		h.upHWM[resource] = epoch
		// A write admitted yet cut off mid-body raised the gateway's HWM.
		if epoch > h.hwm[resource] {
			h.hwm[resource] = epoch
		}
	}
}

// routeOfUpstream finds the route whose upstream base prefixes the
// received path, and the path below that base.
func routeOfUpstream(escaped string) (*edgeRoute, string, bool) {
	for i := range edgeRoutes {
		if sub, ok := policy.Subpath(escaped, edgeRoutes[i].base); ok {
			return &edgeRoutes[i], sub, true
		}
	}
	return nil, "", false
}

// newID returns an id no request body can guess.
func newID() string {
	var b [8]byte
	crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

var (
	edgeMethods  = []string{"POST", "POST", "POST", "PUT", "PATCH", "DELETE", "DELETE", "GET", "GET", "HEAD", "OPTIONS", "PURGE"}
	edgePrefixes = []string{"/tenants", "/tenants/", "/docs/", "/hdr/", "/any/", "/m/", "/orders", "/orders/", "/d/"}
	edgeMisses   = []string{"/tenants..", "/tenantsX", "/TENANTS", "/docs", "/hdr", "/m", "/orders..", "/ordersX", "/"}
	edgeSegments = []string{"42", "43", "a", "%41", "a b", "%20"}
	edgeTricks   = []string{".", "..", "", "%2F", "%2f", "a%2Fb", "%2E", "%2e%2e", "%5C", "x;y", "%3B", "%00", "..%2F", "%252F", "a\"b"}
	edgeValues   = []string{"7", "7", "8", "7,8", "", " 7"}
	edgeQueries  = []string{"?a=1", "?_method=DELETE", "?%5Fmethod=put", "?x=1&_METHOD=POST", "?method=card", "?a=1;_method=PATCH"}
	edgeForged   = [][2]string{{"Fencing-Epoch", "999"}, {"Fencing_Epoch", "998"}, {"fencing-epoch", "1"}, {"Fencing-Resource", "forged"},
		{"Fencing_Resource", "other"}, {"FENCING-RESOURCE", "res-9"}, {"Fencing_Token", "9"}}
	edgeOverrides = [][2]string{{"X-HTTP-Method-Override", "DELETE"}, {"X-Http-Method", "POST"}, {"x_method_override", "PUT"},
		{"X-HTTP-Method-Override", "GET"}, {"X-Method-Override", ""}}
)

// randomEdgeRequest draws one request from rng.
func randomEdgeRequest(rng *rand.Rand) edgeRequest {
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	var b strings.Builder
	if rng.IntN(20) == 0 {
		b.WriteString("http://gw") // absolute-form
	}
	if rng.IntN(5) == 0 {
		b.WriteString(pick(edgeMisses))
	} else {
		b.WriteString(pick(edgePrefixes))
	}
	for n := rng.IntN(4); n > 0; n-- {
		if !strings.HasSuffix(b.String(), "/") || rng.IntN(4) == 0 {
			b.WriteByte('/')
		}
		if rng.IntN(6) == 0 {
			b.WriteString(pick(edgeTricks))
		} else {
			b.WriteString(pick(edgeSegments))
		}
	}
	if rng.IntN(3) == 0 {
		b.WriteByte('/')
	}
	if rng.IntN(10) == 0 {
		b.WriteString(pick(edgeQueries))
	}
	r := edgeRequest{method: pick(edgeMethods), target: strings.ReplaceAll(b.String(), " ", "%20")}
	switch rng.IntN(16) {
	case 0:
		r.method = strings.ToLower(r.method)
	case 1:
		r.method = r.method[:1] + strings.ToLower(r.method[1:])
	}
	if rng.IntN(8) != 0 {
		r.epoch = 1 + rng.Int64N(5)
	}
	for _, name := range []string{"X-Tenant", "X_Tenant", "x-tenant", "X_TENANT"} {
		if rng.IntN(6) == 0 {
			r.headers = append(r.headers, [2]string{name, pick(edgeValues)})
		}
	}
	if rng.IntN(2) == 0 {
		r.headers = append(r.headers, [2]string{"X-Tenant", pick(edgeValues)})
	}
	switch rng.IntN(10) {
	case 0:
		r.headers = append(r.headers, [2]string{"Connection", "X-Tenant"})
	case 1:
		r.headers = append(r.headers, [2]string{"Connection", "keep-alive, x_tenant"})
	case 2:
		r.headers = append(r.headers, [2]string{"Connection", "Fencing-Resource"})
	}
	if rng.IntN(3) != 0 {
		r.headers = append(r.headers, [2]string{gateway.ResourceHeader, "res-" + strconv.Itoa(rng.IntN(3))})
	}
	for rng.IntN(3) == 0 {
		r.headers = append(r.headers, edgeForged[rng.IntN(len(edgeForged))])
	}
	if rng.IntN(12) == 0 {
		r.headers = append(r.headers, edgeOverrides[rng.IntN(len(edgeOverrides))])
	}
	if rng.IntN(5) == 0 {
		r.framing = badFramings[rng.IntN(len(badFramings))]
	} else {
		r.framing = okFramings[rng.IntN(len(okFramings))]
	}
	return r
}

// TestEdgeInvariantProperty sends random requests through the gateway and
// holds each to the model. FENCEGW_EDGE_N sets how many (1500 by default,
// a few seconds); FENCEGW_EDGE_SEED replays a run.
func TestEdgeInvariantProperty(t *testing.T) {
	n := 1500
	if s := os.Getenv("FENCEGW_EDGE_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("FENCEGW_EDGE_N=%q: want a positive count", s)
		}
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FENCEGW_EDGE_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("FENCEGW_EDGE_SEED=%q: want an unsigned integer", s)
		}
	}
	t.Logf("seed %d (FENCEGW_EDGE_SEED=%d replays it), %d requests", seed, seed, n)
	rng := rand.New(rand.NewPCG(seed, 0))
	h := newEdgeHarness(t)
	var tl tally
	for i := 0; i < n; i++ {
		h.check(t, randomEdgeRequest(rng), exact, &tl)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	t.Logf("answers by status: %v", tl.byStatus)
	t.Logf("outcomes by the model's reason (\"\" forwarded): %v", tl.byWhy)
	t.Logf("%d requests sent: %d reached the upstream, every one as the fence admitted it; %d refused (%d cut off mid-body)",
		tl.sent, tl.forwarded, tl.refused, h.partial)
	if len(h.byID[""]) > 0 {
		t.Fatalf("the upstream received %d requests that were never sent", len(h.byID[""]))
	}
	// The generator must exercise every side of the contract.
	for _, s := range []int{201, 400, 404, 412, 428, 501} {
		if n >= 400 && tl.byStatus[s] == 0 {
			t.Errorf("no answer %d in %d requests: the generator does not exercise it", s, n)
		}
	}
}

// FuzzEdgeInvariant lets the fuzzer choose the method, the target, the
// tenant header, its underscore twin and a repeated line of it, a
// Connection value, forged Fencing-Resource, Fencing-Epoch and
// Fencing_Epoch headers, the epoch, and the framing: the bytes that end
// the head and make the body. Whatever it sends, the gateway refuses what
// the model refuses, and forwards nothing but what the fence admitted as
// the upstream reads it.
func FuzzEdgeInvariant(f *testing.F) {
	const cl = "Content-Length: 4\r\n\r\nbody"
	f.Add("POST", "/tenants/42/pay", "7", "", "", "", "", "", "", cl, uint8(3))
	f.Add("post", "/tenants../base/42/pay", "7", "8", "", "", "", "", "", cl, uint8(1))
	f.Add("POST", "/docs/a%2Fb/x", "", "", "", "", "", "", "", cl, uint8(2))
	f.Add("POST", "/docs/a%2Fb/x\"", "", "", "", "", "", "", "", cl, uint8(2))
	f.Add("PUT", "/hdr/x", "7", "8", "", "", "", "", "", cl, uint8(4))
	f.Add("PUT", "/hdr/x", "7", "", "X-Tenant", "", "", "", "", cl, uint8(4))
	f.Add("PUT", "/hdr/x", "7", "", "", "8", "", "", "", cl, uint8(4))
	f.Add("POST", "/any/x", "", "", "", "", "res-1", "999", "998", cl, uint8(5))
	f.Add("POST", "/d/x", "", "", "", "", "", "", "", "X-HTTP-Method-Override: DELETE\r\n"+cl, uint8(0))
	f.Add("GET", "/orders/1", "", "", "", "", "", "", "", "X-Http-Method: POST\r\n\r\n", uint8(0))
	f.Add("POST", "/tenants/42", "", "", "", "", "", "", "", "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nbody\r\n0\r\n\r\n", uint8(1))
	f.Add("POST", "/tenants/42", "", "", "", "", "", "", "", "Content-Length: 4\r\nContent-Length: 5\r\n\r\nbody1", uint8(1))
	f.Add("POST", "/tenants/42", "", "", "", "", "", "", "", "Transfer-Encoding: chunked\r\n\r\n4\nbody\r\n0\r\n\r\n", uint8(1))
	f.Add("POST", "/tenants/42", "", "", "", "", "", "", "", "Transfer-Encoding: chunked, identity\r\n\r\n4\r\nbody\r\n0\r\n\r\n", uint8(1))
	f.Add("POST", "/hdr/x", "7", "", "", "", "", "", "", "X-Fold: a\r\n X-Tenant: 8\r\n"+cl, uint8(1))
	f.Add("POST", "/hdr/x", "7", "", "", "", "", "", "", "Transfer-Encoding: chunked\r\n\r\n4\r\nbody\r\n0\r\nX-Tenant: 8\r\n\r\n", uint8(1))
	f.Add("POST", "/tenants/42", "", "", "", "", "", "", "", "Content-Length: 40\r\n\r\nPOST /tenants/42 HTTP/1.1\r\nHost: gw\r\n\r\n", uint8(1))
	h := newEdgeHarness(f)
	var tl tally
	f.Fuzz(func(t *testing.T, method, target, tenant, twin, conn, repeat, spoofRes, spoofEpoch, spoofEpochU, framing string, epoch uint8) {
		if !validToken(method) || !validTarget(target) || strings.Contains(strings.ToLower(conn), "edge") {
			return
		}
		for _, v := range []string{tenant, twin, conn, repeat, spoofRes, spoofEpoch, spoofEpochU} {
			if !validValue(v) {
				return
			}
		}
		r := edgeRequest{method: method, target: target, epoch: int64(epoch % 8), raw: framing}
		if r.raw == "" {
			r.raw = cl
		}
		for _, kv := range [][2]string{{"X-Tenant", tenant}, {"X_Tenant", twin}, {"X-Tenant", repeat}, {"Connection", conn},
			{gateway.ResourceHeader, spoofRes}, {gateway.EpochHeader, spoofEpoch}, {"Fencing_Epoch", spoofEpochU}} {
			if kv[1] != "" {
				r.headers = append(r.headers, kv)
			}
		}
		h.check(t, r, safe, &tl)
	})
}

func validToken(s string) bool { return len(s) <= 16 && isToken(s) }

func validTarget(s string) bool {
	if s == "" || s[0] != '/' || len(s) > 200 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

func validValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return len(s) < 64
}
