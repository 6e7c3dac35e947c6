package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/fencegw/fencegw/tokens"
)

// Problem is an RFC 9457 problem document with fencegw's extension members.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`

	Route          string `json:"route,omitempty"`
	Resource       string `json:"resource,omitempty"`
	PresentedEpoch *int64 `json:"presented_epoch,omitempty"`
	CurrentEpoch   *int64 `json:"current_epoch,omitempty"`

	// TraceID names the trace of the request that got this answer.
	TraceID string `json:"trace_id,omitempty"`

	Lease     string     `json:"lease,omitempty"`
	Holder    string     `json:"holder,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Owner names the API key that owns the lease (lease-owned): a key's
	// name, never its secret.
	Owner string `json:"owner,omitempty"`

	// retryAfter, in seconds, is sent as the Retry-After header when positive.
	retryAfter int
	// cause is the failure behind a 503, logged, never sent.
	cause error
	// kind is the catalogue entry the problem was made from.
	kind ProblemKind
}

// Decision is the fencing decision the problem reports, if it refuses a
// fenced write.
func (p *Problem) Decision() tokens.Decision { return p.kind.Decision }

// ProblemContentType is the media type of problem documents.
const ProblemContentType = "application/problem+json"

func epochPtr(e int64) *int64 { return &e }

// writeError answers r with the problem err stands for (see problemOf).
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	writeProblem(w, r, problemOf(err))
}

// writeProblem sends p as the answer to r, naming r's trace.
func writeProblem(w http.ResponseWriter, r *http.Request, p Problem) {
	if sc := trace.SpanContextFromContext(r.Context()); sc.HasTraceID() {
		p.TraceID = sc.TraceID().String()
	}
	h := w.Header()
	h.Set("Content-Type", ProblemContentType)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if p.Status == http.StatusUnauthorized && h.Get("WWW-Authenticate") == "" {
		// RFC 9110: a 401 names its scheme. Fencing tokens travel in their
		// own header; the parameters say which check failed.
		h.Set("WWW-Authenticate", `FencingToken realm="fencegw", error="invalid_token"`)
	}
	if p.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.retryAfter))
	}
	w.WriteHeader(p.Status)
	// A failed write means the client is gone; there is no one to tell.
	_ = json.NewEncoder(w).Encode(p)
}
