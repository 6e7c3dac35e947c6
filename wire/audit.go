package wire

import "time"

// Rejection is one entry of the audit of refused writes: the identical
// refusals (resource, decision, epochs, holder, route, status) one replica
// made within one interval, counted.
type Rejection struct {
	ID       string `json:"id"`
	Resource string `json:"resource"`
	// Decision is the fencing decision: stale, missing, invalid, ...
	Decision       string `json:"decision"`
	PresentedEpoch *Epoch `json:"presented_epoch,omitempty"`
	CurrentEpoch   *Epoch `json:"current_epoch,omitempty"`
	Holder         string `json:"holder,omitempty"`
	Replica        string `json:"replica"`
	Route          string `json:"route"`
	// EpochSource is the kind of the route's epoch source (postgres, etcd,
	// redis, zookeeper, kubernetes) that judged the write; absent when the
	// gateway's own fence did alone.
	EpochSource string    `json:"epoch_source,omitempty"`
	Status      int       `json:"status"`
	Count       int64     `json:"count"`
	First       time.Time `json:"first"`
	Last        time.Time `json:"last"`
	// TraceIDs are the traces of the first few refusals counted.
	TraceIDs []string `json:"trace_ids"`
}

// Rejections is the body of GET /v1/audit/rejections.
type Rejections struct {
	Rejections []Rejection `json:"rejections"`
	// NextCursor, when present, asks for the next (older) page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// LeaseRecord is one entry of the lease history: a grant, a release or a
// lapse, or the renewals of one grant through one replica within one
// interval, counted.
type LeaseRecord struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Event   string `json:"event"`
	Holder  string `json:"holder"`
	Epoch   Epoch  `json:"epoch"`
	Replica string `json:"replica"`
	Count   int64  `json:"count"`
	// First and Last are the times of the first and last event counted;
	// for an expiry, when the grant lapsed.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// ExpiresAt is when the grant lapses after the event (acquired and
	// renewed).
	ExpiresAt        *time.Time `json:"expires_at,omitempty"`
	TTLSeconds       *float64   `json:"ttl_seconds,omitempty"`
	LockDelaySeconds *float64   `json:"lock_delay_seconds,omitempty"`
	// PreviousHolder and PreviousEpoch name the grant an acquire followed.
	PreviousHolder string   `json:"previous_holder,omitempty"`
	PreviousEpoch  *Epoch   `json:"previous_epoch,omitempty"`
	TraceIDs       []string `json:"trace_ids"`
}

// LeaseHistory is the body of GET /v1/audit/leases.
type LeaseHistory struct {
	Events     []LeaseRecord `json:"events"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

// AuditResource is one name of GET /v1/audit/resources: a resource or a
// lease name the audit holds entries of.
type AuditResource struct {
	Name string `json:"name"`
}

// AuditResources is the body of GET /v1/audit/resources.
type AuditResources struct {
	Resources []AuditResource `json:"resources"`
	// NextCursor, when present, asks for the next page (names above it).
	NextCursor string `json:"next_cursor,omitempty"`
}
