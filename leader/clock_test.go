package leader_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/problem"
	"github.com/fencegw/fencegw/leader"
)

// slowClock runs at rate of real time from start.
type slowClock struct {
	start time.Time
	rate  float64
}

func (c slowClock) Now() time.Time {
	return c.start.Add(time.Duration(float64(time.Since(c.start)) * c.rate))
}

func (c slowClock) NewTimer(d time.Duration) *time.Timer {
	return time.NewTimer(time.Duration(float64(d) / c.rate))
}

// TestSlowClockLeaderIsFenced: a leader whose clock runs at a tenth of
// real time believes its 2 s lease lasts 20 s and renews too late. Once
// the grant lapsed on the store's clock, it still believes it leads; the
// gateway refuses its write with 412, the upstream never gets it, and the
// Transport ends the term.
func TestSlowClockLeaderIsFenced(t *testing.T) {
	const name = "invoice-sweeper"
	g := newGateway(t, name)
	cfg, rec := nodeA(t, g, name)
	cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod = 2*time.Second, 1500*time.Millisecond, 200*time.Millisecond
	cfg.NoWatch = true
	cfg.Clock = slowClock{start: time.Now(), rate: 0.1}
	e, stop, s := lead(t, cfg, rec)
	defer stop()
	client := writeClient(t, e)
	for deadline := time.Now().Add(wait); g.lease(t, name).Held; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the grant did not lapse")
		}
	}
	if _, ok := e.Current(); !ok {
		t.Fatal("the slow-clock leader stepped down by itself; it should believe it still leads")
	}
	before := len(g.receivedHeaders())
	status, body := postTo(t, client, g.ProxyURL+"/email/send")
	if status != http.StatusPreconditionFailed || !strings.Contains(body, `"type":"`+problem.TypeStaleEpoch+`"`) {
		t.Fatalf("the slow-clock leader's write after its lapse: %d %s, want the gateway's 412", status, body)
	}
	if got := len(g.receivedHeaders()); got != before {
		t.Fatalf("the upstream received the write refused at the lapse")
	}
	st := receive(t, rec.stopped, wait, "OnStoppedLeading")
	if !errors.Is(st.reason, leader.ErrFenced) || st.term.Epoch != s.term.Epoch {
		t.Fatalf("stopped %+v, want epoch %d for ErrFenced", st, s.term.Epoch)
	}
}
