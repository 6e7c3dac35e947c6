package wire

import "time"

// ProblemContentType is the media type of problem documents.
const ProblemContentType = "application/problem+json"

// Problem is an RFC 9457 problem document with fencegw's extension members.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`

	Route          string `json:"route,omitempty"`
	Resource       string `json:"resource,omitempty"`
	PresentedEpoch *Epoch `json:"presented_epoch,omitempty"`
	CurrentEpoch   *Epoch `json:"current_epoch,omitempty"`

	// TraceID names the trace of the request that got this answer.
	TraceID string `json:"trace_id,omitempty"`

	Lease     string     `json:"lease,omitempty"`
	Holder    string     `json:"holder,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Owner names the API key that owns the lease (lease-owned): a key's
	// name, never its secret.
	Owner string `json:"owner,omitempty"`
}
