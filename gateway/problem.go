package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"
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
}

// ProblemContentType is the media type of problem documents.
const ProblemContentType = "application/problem+json"

// Problem types, one per kind of answer the gateway gives itself.
const (
	TypeStaleEpoch       = "urn:fencegw:problem:stale-epoch"
	TypeTokenRequired    = "urn:fencegw:problem:token-required"
	TypeMalformedToken   = "urn:fencegw:problem:malformed-token"
	TypeBadResource      = "urn:fencegw:problem:bad-resource"
	TypeBadPath          = "urn:fencegw:problem:bad-path"
	TypeBadMethod        = "urn:fencegw:problem:bad-method"
	TypeNoRoute          = "urn:fencegw:problem:no-route"
	TypeStoreUnavailable = "urn:fencegw:problem:store-unavailable"
	TypeUpstreamFailed   = "urn:fencegw:problem:upstream-unavailable"
	TypeUpstreamTimeout  = "urn:fencegw:problem:upstream-timeout"
	TypeBodyTooLarge     = "urn:fencegw:problem:body-too-large"
	TypeNotFound         = "urn:fencegw:problem:not-found"
	TypeMethodNotAllowed = "urn:fencegw:problem:method-not-allowed"
	TypeUnauthenticated  = "urn:fencegw:problem:unauthenticated-token"
	TypeWrongResource    = "urn:fencegw:problem:wrong-resource"
	TypeEpochNotIssued   = "urn:fencegw:problem:epoch-not-issued"
	TypeLeaseHeld        = "urn:fencegw:problem:lease-held"
	TypeLeaseLost        = "urn:fencegw:problem:lease-lost"
	TypeLeaseOwned       = "urn:fencegw:problem:lease-owned"
	TypeEpochExhausted   = "urn:fencegw:problem:epoch-exhausted"
	TypeBadRequest       = "urn:fencegw:problem:bad-request"
	TypeUnauthorized     = "urn:fencegw:problem:unauthorized"
	TypeForbidden        = "urn:fencegw:problem:forbidden"
	TypeInternal         = "urn:fencegw:problem:internal"
	TypeDraining         = "urn:fencegw:problem:draining"
	// TypeBadFraming (400): the request broke HTTP/1.1 message framing
	// (Content-Length with Transfer-Encoding, several Content-Lengths, bare
	// LF or CR, obs-fold, a bad chunk...); nothing of it was forwarded.
	TypeBadFraming = "urn:fencegw:problem:bad-framing"
	// TypeHeaderTooLarge (431): the request head exceeds max_header_bytes
	// plus 4 KiB.
	TypeHeaderTooLarge = "urn:fencegw:problem:header-too-large"
	// TypeUnsupportedCoding (501): a Transfer-Encoding other than chunked.
	TypeUnsupportedCoding = "urn:fencegw:problem:unsupported-transfer-coding"
)

func epochPtr(e int64) *int64 { return &e }

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
