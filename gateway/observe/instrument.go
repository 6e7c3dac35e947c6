package observe

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// The gateway's HTTP instrumentation: a server span per request and a
// client span per upstream call, with the semantic conventions' duration
// histograms. It costs a request that is not sampled two non-recording
// spans and two histogram records over cached attribute sets: attributes
// are computed only for spans that record.

// httpMetrics are the HTTP duration histograms and their attribute sets.
type httpMetrics struct {
	server, client metric.Float64Histogram
	sets           sync.Map // setKey -> attribute.Set
}

// setKey names one attribute set of a duration histogram.
type setKey struct {
	client bool
	method string // a known method, or "_OTHER"
	status int
	route  string // the server's operation or route; the client's host
}

func newHTTPMetrics(m metric.Meter) (*httpMetrics, error) {
	bounds := metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
	server, err := m.Float64Histogram("http.server.request.duration", metric.WithUnit("s"), bounds,
		metric.WithDescription("Duration of HTTP server requests."))
	if err != nil {
		return nil, err
	}
	client, err := m.Float64Histogram("http.client.request.duration", metric.WithUnit("s"), bounds,
		metric.WithDescription("Duration of HTTP requests to upstreams."))
	if err != nil {
		return nil, err
	}
	return &httpMetrics{server: server, client: client}, nil
}

// set returns the attribute set of k, built once.
func (h *httpMetrics) set(k setKey) attribute.Set {
	if s, ok := h.sets.Load(k); ok {
		return s.(attribute.Set)
	}
	attrs := []attribute.KeyValue{semconv.HTTPRequestMethodKey.String(k.method)}
	if k.status > 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(k.status))
	}
	if k.client {
		attrs = append(attrs, semconv.ServerAddress(k.route))
	} else {
		attrs = append(attrs, semconv.HTTPRoute(k.route))
	}
	s := attribute.NewSet(attrs...)
	h.sets.Store(k, s)
	return s
}

// knownMethod keeps metric labels bounded: methods outside RFC 9110's and
// PATCH are "_OTHER", as the semantic conventions ask.
func knownMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "_OTHER"
}

// ServerHandler wraps h in a server span per request, continuing the
// client's trace context and baggage; the span is named by method until a
// handler names it by route. Its duration is recorded under operation.
func (o *Observer) ServerHandler(h http.Handler, operation string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx := o.Propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := o.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer))
		if span.IsRecording() {
			span.SetAttributes(serverAttrs(r)...)
		}
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r.WithContext(ctx))
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		setStatusCode(span, status, 500)
		span.End()
		set := o.http.set(setKey{method: knownMethod(r.Method), status: status, route: operation})
		o.http.server.Record(ctx, time.Since(start).Seconds(), metric.WithAttributeSet(set))
	})
}

// serverAttrs are the semantic conventions' request attributes of a
// recording server span.
func serverAttrs(r *http.Request) []attribute.KeyValue {
	attrs := []attribute.KeyValue{semconv.HTTPRequestMethodKey.String(knownMethod(r.Method)),
		semconv.URLPath(r.URL.Path), semconv.NetworkProtocolVersion(protoVersion(r)),
		semconv.URLScheme(scheme(r))}
	if host := r.Host; host != "" {
		attrs = append(attrs, semconv.ServerAddress(host))
	}
	if ua := r.UserAgent(); ua != "" {
		attrs = append(attrs, semconv.UserAgentOriginal(ua))
	}
	if r.RemoteAddr != "" {
		attrs = append(attrs, semconv.NetworkPeerAddress(r.RemoteAddr))
	}
	return attrs
}

func protoVersion(r *http.Request) string {
	if r.ProtoMajor == 2 {
		return "2"
	}
	return strconv.Itoa(r.ProtoMajor) + "." + strconv.Itoa(r.ProtoMinor)
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// statusWriter remembers the status a handler answered with. Unwrap lets
// http.ResponseController reach the connection's flushing and deadlines.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush() // through wrappers that Unwrap
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Transport wraps base in a client span per upstream call that carries
// the trace context and baggage to the upstream, and records the call's
// duration. It sets the propagation headers on the request it is given:
// use it only under the gateway's own proxy, whose outgoing requests are
// its own copies.
func (o *Observer) Transport(base http.RoundTripper) http.RoundTripper {
	return &clientTransport{o: o, base: base}
}

type clientTransport struct {
	o    *Observer
	base http.RoundTripper
}

func (t *clientTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	ctx, span := t.o.tracer.Start(req.Context(), req.Method, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(semconv.HTTPRequestMethodKey.String(knownMethod(req.Method)),
			semconv.URLFull(req.URL.Redacted()), semconv.ServerAddress(req.URL.Host))
	}
	t.o.Propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	status := 0
	switch {
	case err != nil:
		if span.IsRecording() {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
	default:
		status = resp.StatusCode
		setStatusCode(span, status, 400)
	}
	span.End()
	set := t.o.http.set(setKey{client: true, method: knownMethod(req.Method), status: status, route: req.URL.Host})
	t.o.http.client.Record(ctx, time.Since(start).Seconds(), metric.WithAttributeSet(set))
	return resp, err
}

// setStatusCode records an HTTP status on span, marking the span an error
// when the status is errorFrom or above (5xx for a server, 4xx for a
// client).
func setStatusCode(span trace.Span, status, errorFrom int) {
	if span.IsRecording() {
		span.SetAttributes(semconv.HTTPResponseStatusCode(status))
		if status >= errorFrom {
			span.SetStatus(codes.Error, "")
		}
	}
}
