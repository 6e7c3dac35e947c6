package leader

import "time"

// Clock is the time an Elector keeps its own deadlines and waits by: when
// its term ends, when to renew, how long to wait before campaigning again.
// HTTP calls are still bounded in real time. The default is the system's
// monotonic clock; a test sets a Clock that runs slow or fast to see what
// a leader with a bad clock does (the gateway's fence must still refuse
// its writes once its grant lapses on the store's clock).
type Clock interface {
	// Now is the current time on this clock.
	Now() time.Time
	// NewTimer returns a timer that fires once d has passed on this clock.
	NewTimer(d time.Duration) *time.Timer
}

// systemClock is the system's clock.
type systemClock struct{}

func (systemClock) Now() time.Time                       { return time.Now() }
func (systemClock) NewTimer(d time.Duration) *time.Timer { return time.NewTimer(d) }
