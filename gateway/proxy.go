package gateway

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"

	"github.com/fencegw/fencegw/gateway/observe"
	"github.com/fencegw/fencegw/gateway/reqctx"
	"github.com/fencegw/fencegw/gateway/upstream"
)

// routeTransport sends each request through its route's own transport when
// it has one, through def otherwise.
type routeTransport struct{ def http.RoundTripper }

func (t routeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	next := t.def
	ex, _ := reqctx.ExchangeFrom(req.Context())
	if ex != nil && ex.Route != nil && ex.Route.Transport != nil {
		next = ex.Route.Transport
	}
	if ex != nil {
		ex.Forwarding = true
	}
	var resp *http.Response
	var err error
	if _, ok := next.(*upstream.Transport); ok {
		resp, err = next.RoundTrip(req) // cuts at the delivery deadline itself
	} else {
		resp, err = upstream.RoundTripBefore(next, req)
	}
	if ex != nil {
		ex.Answered = err == nil
		if errors.Is(err, upstream.ErrNothingSent) {
			ex.Forwarding = false
		}
	}
	return resp, err
}

// NewProxy returns the reverse proxy behind the fencing middleware. It sends
// each request to its route's upstream, streaming bodies both ways, strips
// the client's fencing headers, the routing headers the fence did not check
// (tokens.StrippedHeaders) and request trailers, and tells the upstream the
// admitted epoch and resource. Its failed exchanges are logged through
// refusals (see upstream.ErrorHandler), the proxy's own complaints (a body cut
// mid-copy) as structured lines of log.
func NewProxy(transport http.RoundTripper, log *slog.Logger, obs *observe.Observer, refusals *observe.RefusalLog) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite:      rewrite,
		Transport:    transport,
		BufferPool:   newBufferPool(),
		ErrorHandler: upstream.ErrorHandler(log, obs, refusals),
		ErrorLog:     slog.NewLogLogger(log.With(slog.String("component", "reverse_proxy")).Handler(), slog.LevelWarn),
		// Flush streamed responses (no Content-Length) as they arrive.
		FlushInterval: -1,
	}
}

func rewrite(pr *httputil.ProxyRequest) {
	ex, _ := reqctx.ExchangeFrom(pr.In.Context()) // MatchRoute started it
	rt := ex.Route
	// The upstream gets the very path the route matched and the fence
	// read, re-encoded canonically: MatchRoute refused the escapes (%2F,
	// %5C, %2E) that would decode differently.
	pr.Out.URL.Path = rt.UpstreamPath(pr.In.URL.Path)
	pr.Out.URL.RawPath = ""
	pr.SetURL(rt.Upstream)
	pr.SetXForwarded()
	// Request trailers arrive after the fence decided, and could name the
	// resource anew for an upstream that merges them into the header:
	// none is forwarded, nor announced.
	pr.Out.Trailer = nil
	h := pr.Out.Header
	for name := range h {
		if isFencingHeader(name) || isUnfencedHeader(name) {
			delete(h, name)
		}
	}
	if ex.Admitted {
		h[EpochHeader] = []string{strconv.FormatInt(ex.Admission.Epoch, 10)}
		h[ResourceHeader] = []string{ex.Admission.Resource}
	}
	if ex.Body != nil {
		// ReverseProxy hides the body behind a wrapper net/http cannot
		// see through; an in-memory reader lets it send head and body in
		// one write.
		pr.Out.Body = io.NopCloser(bytes.NewReader(ex.Body))
	}
}

// isFencingHeader reports whether name is one of the fencing headers, also
// when spelled with underscores (CGI-style servers fold "_" into "-"), so a
// client cannot forge what the upstream reads as the admitted epoch.
func isFencingHeader(name string) bool {
	if len(name) < len("Fencing-") || !strings.EqualFold(name[:len("Fencing")], "Fencing") {
		return false
	}
	n := strings.ReplaceAll(name, "_", "-")
	return strings.EqualFold(n, TokenHeader) || strings.EqualFold(n, EpochHeader) || strings.EqualFold(n, ResourceHeader)
}

// bufferPool recycles the proxy's 32 KiB copy buffers.
type bufferPool struct{ pool sync.Pool }

func newBufferPool() *bufferPool {
	return &bufferPool{pool: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}
}

func (p *bufferPool) Get() []byte  { return *p.pool.Get().(*[]byte) }
func (p *bufferPool) Put(b []byte) { p.pool.Put(&b) }
