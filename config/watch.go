package config

import "time"

// Watch tunes the lease watch streams of the control API.
type Watch struct {
	// WriteTimeout bounds every write to a watch stream: a watcher that
	// stops reading is dropped once a write has waited this long.
	WriteTimeout Duration `yaml:"write_timeout"`
	// MaxWatchers caps the watch streams open at once in this process;
	// beyond it a new watch is answered 503 with Retry-After.
	MaxWatchers int `yaml:"max_watchers"`
}

// Defaults of the watch section.
const (
	DefaultWatchWriteTimeout = 10 * time.Second
	DefaultMaxWatchers       = 10_000
)

// validateWatch checks the watch section, naming each bad field.
func validateWatch(w Watch, bad func(field, format string, args ...any)) {
	if d := w.WriteTimeout.D(); d < 100*time.Millisecond || d > 10*time.Minute {
		bad("watch.write_timeout", "must be from 100ms to 10m, got %s", d)
	}
	if n := w.MaxWatchers; n < 1 || n > 1_000_000 {
		bad("watch.max_watchers", "must be from 1 to 1000000, got %d", n)
	}
}
