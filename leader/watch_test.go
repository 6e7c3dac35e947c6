package leader_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/leader"
)

// TestWatchStepsDownAtOnce: a leader whose grant is released behind its
// back steps down on the lease watch's event, long before its next renewal
// would have told it.
func TestWatchStepsDownAtOnce(t *testing.T) {
	const name = "invoice-sweeper"
	g := newGateway(t, name)
	cfg, rec := nodeA(t, g, name)
	cfg.LeaseDuration, cfg.RenewDeadline, cfg.RenewInterval = 30*time.Second, 25*time.Second, 20*time.Second
	_, stop, s := lead(t, cfg, rec)
	defer stop()
	time.Sleep(300 * time.Millisecond) // the watch is open
	if code, body := g.leaseCall(t, name, "release", map[string]any{"holder": "node-a", "epoch": s.term.Epoch}); code != http.StatusNoContent {
		t.Fatalf("release: %d %s", code, body)
	}
	// Its next renewal is 20 s away: only the watch can tell it this soon.
	st := receive(t, rec.stopped, 10*time.Second, "node-a to step down")
	if !errors.Is(st.reason, leader.ErrLeaseLost) || !strings.Contains(st.reason.Error(), "lease watch says released") {
		t.Fatalf("stopped for %v, want the watch's release", st.reason)
	}
}

// TestWatchCampaignsAtOnce: a candidate polling every 10 s acquires the
// lease the moment its holder releases it, on the watch's event.
func TestWatchCampaignsAtOnce(t *testing.T) {
	const name = "invoice-sweeper"
	g := newGateway(t, name)
	cfgA, recA := nodeA(t, g, name)
	cfgA.ReleaseOnCancel = true
	_, stopA, _ := lead(t, cfgA, recA)

	recB := newRecorder("node-b", nil)
	cfgB := testConfig(t, g, name, "node-b", recB)
	cfgB.LeaseDuration, cfgB.RenewDeadline, cfgB.RetryPeriod = 60*time.Second, 40*time.Second, 10*time.Second
	b := mustNew(t, cfgB)
	stopB := runElector(t, b.Run)
	defer stopB()
	time.Sleep(time.Second) // node-b tried once, was refused, and waits at least 10 s

	released := time.Now()
	mustStop(t, stopA) // node-a releases on cancel
	s := receive(t, recB.started, 8*time.Second, "node-b to lead before its next poll")
	t.Logf("node-b led %s after node-a's release (its next poll was 10 s or more away)", time.Since(released).Round(time.Millisecond))
	if s.term.Epoch != 2 {
		t.Fatalf("node-b led at epoch %d, want 2", s.term.Epoch)
	}
}
