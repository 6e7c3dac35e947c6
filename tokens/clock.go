package tokens

import (
	"sync/atomic"
	"time"
)

// Clock is where a gateway process reads the wall-clock time: the time it
// tells other parties or compares with theirs. One Clock is handed down
// from the composition root, so that a test can jump it.
//
// Two kinds of time, and which code uses which:
//
//   - Wall time, from Clock.Now: a token's iat and exp (signed and
//     checked), audit timestamps, a lease's reported ExpiresAt and what is
//     compared with it, expiries written to disk or computed from a store's
//     wall-clock answer. A jump of the host's clock moves these, and must:
//     they are compared with other machines' clocks.
//   - Monotonic time, from time.Now, time.Since, time.Until and timers,
//     never from a Clock: every duration measured in this process and
//     every local deadline — above all a write's DeliverBy, the fence's
//     cached lease life and the embedded store's lease deadlines. Go's
//     monotonic reading ignores wall-clock jumps, so a jump cannot stretch
//     a lease here; code that derived such a deadline from wall time would
//     let a lapsed write through after a backward jump.
//
// Now's result carries no monotonic reading (as if from t.Round(0)), from
// every implementation: comparing two of its values compares wall times, in
// production as under a test's jump. Implementations are safe for
// concurrent use and cheap (Now sits on request paths).
type Clock interface {
	// Now returns the current wall-clock time, without a monotonic
	// reading.
	Now() time.Time
}

// SystemClock is the host's wall clock.
type SystemClock struct{}

// Now returns time.Now() without its monotonic reading.
func (SystemClock) Now() time.Time { return time.Now().Round(0) }

// OffsetClock is the host's wall clock moved by an offset that may change
// at any time: a wall-clock jump as settimeofday makes one, for tests. It
// moves only the wall time; the monotonic time of the process (time.Now)
// goes on unchanged, as it does when the host's clock is set. The zero
// value has no offset.
type OffsetClock struct {
	offset atomic.Int64 // nanoseconds
}

// Now returns the host's wall-clock time plus the offset, without a
// monotonic reading.
func (c *OffsetClock) Now() time.Time {
	return time.Now().Round(0).Add(time.Duration(c.offset.Load()))
}

// Set jumps the clock: from now on it reads the host's time plus offset.
func (c *OffsetClock) Set(offset time.Duration) { c.offset.Store(int64(offset)) }

// Offset returns the offset in force.
func (c *OffsetClock) Offset() time.Duration { return time.Duration(c.offset.Load()) }

// ClockOr returns c, or SystemClock when c is nil.
func ClockOr(c Clock) Clock {
	if c == nil {
		return SystemClock{}
	}
	return c
}
