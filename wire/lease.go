package wire

import "time"

// LeaseState is the body of the lease endpoints' answers. Every caller
// allowed to use a lease name sees the same state, owner included; only
// acquire and renew answers carry a token, and only to a caller that may
// use the grant.
type LeaseState struct {
	Name       string    `json:"name"`
	Holder     string    `json:"holder"`
	Epoch      Epoch     `json:"epoch"`
	ExpiresAt  time.Time `json:"expires_at"`
	TTLSeconds float64   `json:"ttl_seconds"`
	// LockDelaySeconds is the grant's lock-delay; absent when none.
	LockDelaySeconds float64 `json:"lock_delay_seconds,omitempty"`
	Held             bool    `json:"held"`
	// Owner is the name (never the secret) of the API key that acquired
	// the grant; absent when the grant is unowned (no api_keys).
	Owner          string     `json:"owner,omitempty"`
	Token          string     `json:"token,omitempty"`
	TokenExpiresAt *time.Time `json:"token_expires_at,omitempty"`
}

// The lease watch's events (LeaseEvent.Event).
const (
	EventAcquired  = "acquired"
	EventRenewed   = "renewed"
	EventReleased  = "released"
	EventExpired   = "expired"
	EventLockDelay = "lock_delay"
)

// LeaseEvent is the data of a lease watch's event.
type LeaseEvent struct {
	Event     string    `json:"event"`
	Name      string    `json:"name"`
	Holder    string    `json:"holder"`
	Epoch     Epoch     `json:"epoch"`
	ExpiresAt time.Time `json:"expires_at"`
	// At is when the gateway saw the change.
	At time.Time `json:"at"`
	// LockDelayUntil is when the lock-delay after an unclean lapse ends
	// (lock_delay events).
	LockDelayUntil *time.Time `json:"lock_delay_until,omitempty"`
}

// FenceState is the body of GET /v1/fences/{resource}.
type FenceState struct {
	Resource string `json:"resource"`
	Epoch    Epoch  `json:"epoch"`
}
