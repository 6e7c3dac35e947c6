package audit_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/audit"

	"github.com/fencegw/fencegw/tokens"
)

// TestAuditRecorderOnItsClock: the recorder decides that an entry's
// interval has ended on the clock its events are timed on, so a jumped
// clock neither forgets an open interval's entry nor keeps an ended one.
func TestAuditRecorderOnItsClock(t *testing.T) {
	clock := &tokens.OffsetClock{}
	clock.Set(-time.Hour)
	a, _, _ := newRecorder(t, audit.Options{Interval: time.Hour, Clock: clock})
	a.Refused(clock.Now(), stale("r", 1), "")
	if err := a.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := a.Pending(); n != 1 {
		t.Fatalf("after a flush %d entries are held, want the one of the interval still open on the recorder's clock", n)
	}
	clock.Set(2 * time.Hour)
	if err := a.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := a.Pending(); n != 0 {
		t.Fatalf("after the clock passed the interval's end %d entries are held, want none", n)
	}
}
