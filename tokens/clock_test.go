package tokens_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// hasMonotonic reports whether t carries a monotonic reading (String shows
// it as "m=±…").
func hasMonotonic(t time.Time) bool { return strings.Contains(t.String(), " m=") }

func TestClocksCarryNoMonotonicReading(t *testing.T) {
	var oc tokens.OffsetClock
	oc.Set(time.Hour)
	for name, c := range map[string]tokens.Clock{"system": tokens.SystemClock{}, "offset": &oc, "nil": tokens.ClockOr(nil)} {
		if now := c.Now(); hasMonotonic(now) {
			t.Errorf("%s: Now() = %s carries a monotonic reading", name, now)
		}
	}
}

func TestOffsetClockJumpsTheWallTimeOnly(t *testing.T) {
	var c tokens.OffsetClock
	for _, offset := range []time.Duration{0, 10 * time.Minute, -10 * time.Minute, -time.Hour} {
		c.Set(offset)
		if c.Offset() != offset {
			t.Fatalf("Offset() = %s after Set(%s)", c.Offset(), offset)
		}
		before := time.Now()
		got := c.Now()
		after := time.Now()
		// Compared as wall times: got lies within [before, after] moved
		// by offset.
		if got.Before(before.Round(0).Add(offset)) || got.After(after.Round(0).Add(offset)) {
			t.Errorf("offset %s: Now() = %s, want within %s..%s moved by the offset", offset, got, before, after)
		}
	}
	// A monotonic deadline set before a backward jump is not stretched by
	// it: time.Now goes on as before.
	deadline := time.Now().Add(50 * time.Millisecond)
	c.Set(-time.Hour)
	time.Sleep(60 * time.Millisecond)
	if time.Now().Before(deadline) {
		t.Error("a monotonic deadline moved with the offset clock")
	}
	// The same deadline as a wall time, compared with the jumped clock,
	// is an hour away: what code deciding on wall time would get wrong.
	if !c.Now().Before(deadline.Round(0)) {
		t.Error("the jumped clock's wall time did not move back")
	}
}
