package gateway

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// Rejection is one refused fenced write, as the audit keeps it.
type Rejection struct {
	Time           time.Time       `json:"time"`
	TraceID        string          `json:"trace_id,omitempty"`
	SpanID         string          `json:"span_id,omitempty"`
	Route          string          `json:"route"`
	Resource       string          `json:"resource,omitempty"`
	PresentedEpoch *int64          `json:"presented_epoch,omitempty"`
	CurrentEpoch   *int64          `json:"current_epoch,omitempty"`
	Holder         string          `json:"holder,omitempty"`
	Decision       tokens.Decision `json:"decision"`
	Status         int             `json:"status"`
	Method         string          `json:"method"`
	Path           string          `json:"path"`
}

// Audit keeps the most recent refusals of one replica in memory: a ring of
// fixed size, so its memory is bounded; the oldest entries are dropped
// first. It survives trace sampling: every refusal is recorded.
type Audit struct {
	mu   sync.Mutex
	ring []Rejection
	next int // index of the next write
	full bool
}

// NewAudit returns an Audit keeping the last size refusals (the
// configuration's telemetry.audit_size); with size < 1 it keeps none.
func NewAudit(size int) *Audit {
	return &Audit{ring: make([]Rejection, max(size, 0))}
}

// Record adds a refusal.
func (a *Audit) Record(r Rejection) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.ring) == 0 {
		return
	}
	a.ring[a.next] = r
	a.next = (a.next + 1) % len(a.ring)
	if a.next == 0 {
		a.full = true
	}
}

// List returns up to limit refusals, newest first, only those for resource
// when it is not empty.
func (a *Audit) List(resource string, limit int) []Rejection {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.next
	if a.full {
		n = len(a.ring)
	}
	out := make([]Rejection, 0, min(limit, n))
	for i := 0; i < n && len(out) < limit; i++ {
		r := a.ring[(a.next-1-i+len(a.ring))%len(a.ring)]
		if resource == "" || r.Resource == resource {
			out = append(out, r)
		}
	}
	return out
}

// Size is the number of refusals the Audit can hold.
func (a *Audit) Size() int { return len(a.ring) }

// Rejections is the body of GET /v1/audit/rejections.
type Rejections struct {
	Rejections []Rejection `json:"rejections"`
}

func (c *control) rejections(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 100
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 10000 {
			badRequest(w, r, "limit must be an integer from 1 to 10000")
			return
		}
		limit = n
	}
	out := Rejections{Rejections: []Rejection{}}
	if c.Observer.Audit != nil {
		out.Rejections = c.Observer.Audit.List(q.Get("resource"), limit)
	}
	writeJSON(w, http.StatusOK, out)
}
