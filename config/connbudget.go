package config

import "time"

// Ranges of the connection budget's keys (see Config.BodyTimeout).
const (
	maxBodyTimeout  = time.Hour
	maxWriteTimeout = time.Hour
	maxMinBodyRate  = 1 << 30
	maxConnections  = 1_000_000
)

// validateConnBudget checks the keys that bound a connection's phases and
// the connections open per listener.
func validateConnBudget(c *Config, bad func(field, format string, args ...any)) {
	if d := c.BodyTimeout.D(); d < time.Millisecond || d > maxBodyTimeout {
		bad("body_timeout", "must be from 1ms to %s, got %s", maxBodyTimeout, d)
	}
	if r := c.MinBodyRate; r < 0 || r > maxMinBodyRate {
		bad("min_body_rate", "must be from 0 to %d bytes per second, got %d", maxMinBodyRate, r)
	}
	if d := c.WriteTimeout.D(); d < time.Millisecond || d > maxWriteTimeout {
		bad("write_timeout", "must be from 1ms to %s, got %s", maxWriteTimeout, d)
	}
	if n := c.MaxConnections; n < 1 || n > maxConnections {
		bad("max_connections", "must be from 1 to %d, got %d", maxConnections, n)
	}
}
