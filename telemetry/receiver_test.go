package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"go.opentelemetry.io/otel/trace"
)

// receivedRequest is one export call as a real OTLP receiver saw it.
type receivedRequest struct {
	path            string // HTTP only
	contentType     string // HTTP only
	contentEncoding string // HTTP only
	header          map[string]string
	body            []byte                                    // raw body, HTTP only
	msg             *collectortrace.ExportTraceServiceRequest // nil for JSON
}

// traceReceiver is an OTLP traces receiver: an http.Handler for OTLP/HTTP
// (protobuf and JSON) and a TraceServiceServer for OTLP/gRPC.
type traceReceiver struct {
	collectortrace.UnimplementedTraceServiceServer

	mu   sync.Mutex
	reqs []receivedRequest
}

func (r *traceReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rr := receivedRequest{
		path:            req.URL.Path,
		contentType:     req.Header.Get("Content-Type"),
		contentEncoding: req.Header.Get("Content-Encoding"),
		header:          map[string]string{},
		body:            b,
	}
	for k := range req.Header {
		rr.header[strings.ToLower(k)] = req.Header.Get(k)
	}
	switch rr.contentType {
	case "application/x-protobuf":
		rr.msg = &collectortrace.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(b, rr.msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		r.add(rr)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(resp)
	case "application/json":
		r.add(rr)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "{}")
	default:
		http.Error(w, "unsupported content type", http.StatusUnsupportedMediaType)
	}
}

// Export implements collectortrace.TraceServiceServer.
func (r *traceReceiver) Export(ctx context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	rr := receivedRequest{header: map[string]string{}, msg: req}
	md, _ := metadata.FromIncomingContext(ctx)
	for k, v := range md {
		rr.header[k] = strings.Join(v, ",")
	}
	r.add(rr)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (r *traceReceiver) add(rr receivedRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, rr)
}

func (r *traceReceiver) requests() []receivedRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receivedRequest(nil), r.reqs...)
}

// receivedSpan is a span with its resource.
type receivedSpan struct {
	resource []*commonpb.KeyValue
	span     *tracepb.Span
}

// spans returns every protobuf-decoded span received.
func (r *traceReceiver) spans() []receivedSpan {
	var out []receivedSpan
	for _, req := range r.requests() {
		if req.msg == nil {
			continue
		}
		for _, rs := range req.msg.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					out = append(out, receivedSpan{resource: rs.GetResource().GetAttributes(), span: s})
				}
			}
		}
	}
	return out
}

// attr returns the value of key in kvs.
func attr(kvs []*commonpb.KeyValue, key string) (*commonpb.AnyValue, bool) {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return kv.GetValue(), true
		}
	}
	return nil, false
}

// checkStaleSpan asserts that r received exactly the span emitSpan made with
// span context sc, with the test resource.
func checkStaleSpan(t *testing.T, r *traceReceiver, sc trace.SpanContext) {
	t.Helper()
	spans := r.spans()
	if len(spans) != 1 {
		t.Fatalf("receiver got %d spans, want 1", len(spans))
	}
	got := spans[0]
	tid, sid := sc.TraceID(), sc.SpanID()
	if !bytes.Equal(got.span.GetTraceId(), tid[:]) || !bytes.Equal(got.span.GetSpanId(), sid[:]) {
		t.Errorf("span ids = %x/%x, want %s/%s", got.span.GetTraceId(), got.span.GetSpanId(), tid, sid)
	}
	if got.span.GetName() != "POST /email/" || got.span.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("span = %q kind %v, want %q server", got.span.GetName(), got.span.GetKind(), "POST /email/")
	}
	for key, want := range map[string]string{
		"service.name":           "fencegw-test",
		"deployment.environment": "test",
		"service.version":        "v0.0.0-test",
		"telemetry.sdk.language": "go",
	} {
		if v, ok := attr(got.resource, key); !ok || v.GetStringValue() != want {
			t.Errorf("resource %s = %v, want %q", key, v, want)
		}
	}
	if v, ok := attr(got.span.GetAttributes(), "fencing.decision"); !ok || v.GetStringValue() != "stale" {
		t.Errorf("span attribute fencing.decision = %v, want stale", v)
	}
	events := got.span.GetEvents()
	if len(events) != 1 || events[0].GetName() != "fencing.stale_write_rejected" {
		t.Fatalf("span events = %v, want one fencing.stale_write_rejected", events)
	}
	if v, ok := attr(events[0].GetAttributes(), "fencing.epoch.current"); !ok || v.GetIntValue() != 7 {
		t.Errorf("event attribute fencing.epoch.current = %v, want 7", v)
	}
}
