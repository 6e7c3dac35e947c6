package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
)

// routeTransport sends each request through its route's own transport when
// it has one, through def otherwise.
type routeTransport struct{ def http.RoundTripper }

func (t routeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	next := t.def
	ex, _ := exchangeFrom(req.Context())
	if ex != nil && ex.route != nil && ex.route.Transport != nil {
		next = ex.route.Transport
	}
	if ex != nil {
		ex.forwarding = true
	}
	var resp *http.Response
	var err error
	if _, ok := next.(*Transport); ok {
		resp, err = next.RoundTrip(req) // cuts at the delivery deadline itself
	} else {
		resp, err = roundTripBefore(next, req)
	}
	if ex != nil {
		ex.answered = err == nil
		if errors.Is(err, errNothingSent) {
			ex.forwarding = false
		}
	}
	return resp, err
}

// NewProxy returns the reverse proxy behind the fencing middleware. It sends
// each request to its route's upstream, streaming bodies both ways, strips
// the client's fencing headers, the routing headers the fence did not check
// (tokens.StrippedHeaders) and request trailers, and tells the upstream the
// admitted epoch and resource. Its failed exchanges are logged through
// refusals (see proxyErrorHandler), the proxy's own complaints (a body cut
// mid-copy) as structured lines of log.
func NewProxy(transport http.RoundTripper, log *slog.Logger, obs *Observer, refusals *RefusalLog) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite:      rewrite,
		Transport:    transport,
		BufferPool:   newBufferPool(),
		ErrorHandler: proxyErrorHandler(log, obs, refusals),
		ErrorLog:     slog.NewLogLogger(log.With(slog.String("component", "reverse_proxy")).Handler(), slog.LevelWarn),
		// Flush streamed responses (no Content-Length) as they arrive.
		FlushInterval: -1,
	}
}

func rewrite(pr *httputil.ProxyRequest) {
	ex, _ := exchangeFrom(pr.In.Context()) // MatchRoute started it
	rt := ex.route
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
	if ex.admitted {
		h[EpochHeader] = []string{strconv.FormatInt(ex.admission.Epoch, 10)}
		h[ResourceHeader] = []string{ex.admission.Resource}
	}
	if ex.body != nil {
		// ReverseProxy hides the body behind a wrapper net/http cannot
		// see through; an in-memory reader lets it send head and body in
		// one write.
		pr.Out.Body = io.NopCloser(bytes.NewReader(ex.body))
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

// StatusClientClosedRequest is logged when the client went away before the
// upstream answered (nginx's 499); nobody receives it.
const StatusClientClosedRequest = 499

// proxyErrorHandler answers an exchange the reverse proxy could not
// complete, and logs it with the request's context (its trace) and route:
// a client that went away and an upstream that failed through refusals,
// so that an upstream outage is a few lines a second.
func proxyErrorHandler(log *slog.Logger, obs *Observer, refusals *RefusalLog) func(http.ResponseWriter, *http.Request, error) {
	return func(w http.ResponseWriter, r *http.Request, err error) {
		rt, _ := RouteFrom(r.Context())
		if fe := bodyViolation(r.Context()); fe != nil {
			// The body broke framing after its head was forwarded: the
			// upstream's connection was cut before the request was whole.
			log.LogAttrs(r.Context(), slog.LevelWarn, "request framing violated mid-body", slog.String("route", rt.Name), slog.String("remote", r.RemoteAddr),
				slog.Int("status", fe.Status), slog.String("error", fe.Detail))
			writeFramingProblem(w, r, fe)
			return
		}
		if a, ok := AdmissionFrom(r.Context()); ok && errors.Is(err, errDeliveryCut) {
			log.LogAttrs(r.Context(), slog.LevelWarn, "write cut: its lease ran out before it was delivered whole",
				slog.String("route", rt.Name), slog.String("resource", a.Resource), slog.Int64("epoch", a.Epoch),
				slog.String("error", err.Error()))
			writeLapsed(w, r, a, !errors.Is(err, errNothingSent), obs)
			return
		}
		if errors.Is(err, context.Canceled) && errors.Is(r.Context().Err(), context.Canceled) {
			if refusals.allow(rt.Name, "client-closed", StatusClientClosedRequest) {
				log.LogAttrs(r.Context(), slog.LevelInfo, "client went away", slog.String("route", rt.Name),
					slog.Int("status", StatusClientClosedRequest))
			}
			w.WriteHeader(StatusClientClosedRequest)
			return
		}
		cause := err
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
		case isTimeout(err):
			err = refuseCause(KindUpstreamSlow, "the upstream did not answer in time; the write may or may not have taken effect", err)
		default:
			err = refuseCause(KindUpstream, "the upstream could not be reached or broke the connection", err)
		}
		p := problemOf(err)
		p.Route = rt.Name
		if a, ok := AdmissionFrom(r.Context()); ok {
			p.Resource, p.PresentedEpoch = a.Resource, epochPtr(a.Epoch)
		}
		if refusals.allow(rt.Name, problemDecision(&p), p.Status) {
			log.LogAttrs(r.Context(), slog.LevelWarn, "upstream failed", slog.String("route", rt.Name),
				slog.Int("status", p.Status), slog.String("error", cause.Error()))
		}
		writeProblem(w, r, p)
	}
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// bufferPool recycles the proxy's 32 KiB copy buffers.
type bufferPool struct{ pool sync.Pool }

func newBufferPool() *bufferPool {
	return &bufferPool{pool: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}
}

func (p *bufferPool) Get() []byte  { return *p.pool.Get().(*[]byte) }
func (p *bufferPool) Put(b []byte) { p.pool.Put(&b) }
