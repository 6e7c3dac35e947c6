package config

import (
	"fmt"
	"time"
)

// Leases bounds the token authority's lease names.
type Leases struct {
	// MaxLive caps the live leases across the whole store: held, or lapsed
	// without a release and still in their lock-delay. An acquire that
	// would make one more is answered 429 with Retry-After. The count is
	// shared by every replica, read from the store at most once a second
	// per replica, so it may overshoot by about replicas × the grants one
	// replica makes in a second.
	MaxLive int `yaml:"max_live"`
	// Retention is how long the record of a lease that lapsed or was
	// released (and whose lock-delay ended) is kept before it is
	// reclaimed. The resource's high-water mark is never reclaimed: the
	// name's next grant still gets an epoch above every one issued.
	Retention Duration `yaml:"retention"`
}

// Defaults of the leases section.
const (
	DefaultMaxLiveLeases  = 10_000
	DefaultLeaseRetention = 24 * time.Hour
)

// maxMaxLive is the largest leases.max_live.
const maxMaxLive = 10_000_000

// validateLeases checks the leases section and every api_keys[].max_leases
// against it, naming each bad field.
func validateLeases(c *Config, bad func(field, format string, args ...any)) {
	if n := c.Leases.MaxLive; n < 1 || n > maxMaxLive {
		bad("leases.max_live", "must be from 1 to %d, got %d", maxMaxLive, n)
	}
	if d := c.Leases.Retention.D(); d < time.Minute || d > 365*24*time.Hour {
		bad("leases.retention", "must be from 1m to 8760h, got %s", d)
	}
	for i, k := range c.APIKeys {
		if k.MaxLeases < 0 || k.MaxLeases > c.Leases.MaxLive {
			bad(fmt.Sprintf("api_keys[%d].max_leases", i), "must be from 0 (no cap of its own) to leases.max_live (%d), got %d",
				c.Leases.MaxLive, k.MaxLeases)
		}
	}
}
