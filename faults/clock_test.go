package faults

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The gateway's test hook for wall-clock jumps (server/clock.go): Go reads
// the time through the vDSO, so faketime cannot move a gateway's clock;
// instead it follows the offset in this file, and only with the test flag.
const (
	envGatewayClockFile = "FENCEGW_TEST_CLOCK_FILE"
	envGatewayTestHooks = "FENCEGW_TEST_HOOKS"
)

// clockJump is how far the clock-jump fault moves a gateway's wall clock:
// several lease TTLs, and beyond the verifier's 5 s leeway on iat and exp.
const clockJump = 5 * leaseTTL

// jumpClock sets the process's wall clock to the host's plus offset (it
// follows within 10 ms). The file is replaced whole, never seen half
// written.
func (g *gatewayProc) jumpClock(t *testing.T, offset time.Duration) {
	tmp := g.clockFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(int64(offset), 10)), 0o600); err != nil {
		t.Errorf("clock jump: %v", err)
	}
	if err := os.Rename(tmp, g.clockFile); err != nil {
		t.Errorf("clock jump: %v", err)
	}
}

// clockJumper makes the clock-jump fault: replica 0's clock jumps forward
// and replica 1's backward by clockJump; after a lease TTL they swap (a
// jump of twice clockJump each way); the heal sets both back. Leased
// writes go on through all three replicas all the while.
type clockJumper struct {
	stop chan struct{}
	done sync.WaitGroup
}

func (j *clockJumper) inject(c *cluster) {
	c.gateways[0].jumpClock(c.t, clockJump)
	c.gateways[1].jumpClock(c.t, -clockJump)
	c.gateways[0].awaitClock(c.t, clockJump)
	c.gateways[1].awaitClock(c.t, -clockJump)
	j.stop = make(chan struct{})
	j.done.Go(func() {
		select {
		case <-j.stop:
		case <-time.After(leaseTTL):
			c.gateways[0].jumpClock(c.t, -clockJump)
			c.gateways[1].jumpClock(c.t, clockJump)
		}
	})
}

func (j *clockJumper) heal(c *cluster) {
	close(j.stop)
	j.done.Wait()
	c.gateways[0].jumpClock(c.t, 0)
	c.gateways[1].jumpClock(c.t, 0)
	c.gateways[0].awaitClock(c.t, 0)
	c.gateways[1].awaitClock(c.t, 0)
}

// awaitClock waits (bounded) until the process's wall clock reads the
// host's plus offset, to a second: the iat of a token it issues for a
// probe lease of its own (never written to) says so. When no probe is
// answered (another fault may have cut the store) it only logs.
func (g *gatewayProc) awaitClock(t *testing.T, offset time.Duration) {
	var (
		got      time.Duration
		answered bool
	)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if d, ok := g.clockOffset(); ok {
			got, answered = d, true
			if d > offset-2*time.Second && d < offset+2*time.Second {
				return
			}
		}
	}
	if !answered {
		t.Logf("gateway %d: no probe token came back; its clock jump to %s is unconfirmed", g.replica, offset)
		return
	}
	t.Errorf("gateway %d: its clock reads %s from the host's, want %s: the clock hook did not take", g.replica, got, offset)
}

// probeClient sends clock probes; a probe never waits long.
var probeClient = &http.Client{Timeout: time.Second}

// clockOffset is how far the process's wall clock is from the host's, to
// a second, from the iat of a token for a probe lease.
func (g *gatewayProc) clockOffset() (time.Duration, bool) {
	name := fmt.Sprintf("clock-probe-%d", g.replica)
	before := time.Now()
	resp, err := probeClient.Post(g.apiURL()+"/v1/leases/"+name+"/acquire", "application/json",
		strings.NewReader(`{"holder":"probe","ttl_seconds":2}`)) // etcd grants from 2s
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var l struct {
		Token string `json:"token"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&l) != nil {
		return 0, false
	}
	parts := strings.Split(l.Token, ".")
	if len(parts) != 3 {
		return 0, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct {
		IssuedAt int64 `json:"iat"`
	}
	if err != nil || json.Unmarshal(payload, &claims) != nil {
		return 0, false
	}
	return time.Unix(claims.IssuedAt, 0).Sub(before.Truncate(time.Second)), true
}

// clockJumpFault is the fault's name in the plan.
const clockJumpFault = "gateway-clock-jump"

// clockJumpHold is how long the fault lasts at least: both jumps, each
// outlasting a lease.
const clockJumpHold = 2*leaseTTL + time.Second

// TestClockJump runs the workload against PostgreSQL and a three-member
// etcd while two gateways' wall clocks jump forward and backward by more
// than a lease TTL (the clock-jump fault alone), and checks the history as
// the whole suite does: above all that no write of a stale epoch reached
// the upstream after one of a newer epoch, and that the jumped gateways
// decided leased writes while their clocks were off.
func TestClockJump(t *testing.T) {
	_, hold, _ := suiteSettings(t)
	t.Setenv(envOnly, "^"+clockJumpFault+"$")
	for _, store := range both {
		t.Run(store, func(t *testing.T) { runSuite(t, store, ciSeeds[0], hold, 0) })
	}
}

// leasedInFlight counts, per replica the window is aimed at, the leased
// writes the replica decided while the fault was in force: admitted (and
// delivered or cut), or refused by its fence or its token check, which read
// the jumped clock. Writes with no answer or a store outage's 503 are not
// counted: no decision of the replica's met them. Admitted alone would
// depend on luck: a clock jumped forward ends the leader's term at once
// (its renewals are refused), and under load the next grant may come after
// the window.
func leasedInFlight(h *History, w Window) map[int]int {
	n := map[int]int{}
	for _, r := range w.Replicas {
		n[r] = 0
	}
	for _, op := range h.Ops {
		decided := op.Outcome != OutcomeUnknown && op.Outcome != OutcomeUnavailable
		if _, aimed := n[op.Replica]; aimed && op.Kind == OpSigned && decided &&
			op.Call.After(w.InForce) && op.Return.Before(w.Heal) {
			n[op.Replica]++
		}
	}
	return n
}

// clockJumpMaxHold bounds how long awaitJumpedDecisions keeps the clocks
// jumped beyond clockJumpHold.
const clockJumpMaxHold = 10 * leaseTTL

// awaitJumpedDecisions keeps the clock-jump fault in force (bounded by
// clockJumpMaxHold) until every replica it is aimed at has decided a
// leased write since inForce. Whether a leader holds the lease during the
// jump's first seconds is luck (the slow-clock leader or a lock-delay may
// hold it, and a forward jump ends a term at once), and a window that met
// no leased write on a replica tests nothing there.
func awaitJumpedDecisions(w *workload, replicas []int, inForce time.Time) {
	for deadline := time.Now().Add(clockJumpMaxHold); time.Now().Before(deadline); {
		n := leasedInFlight(&History{Ops: w.history()}, Window{Replicas: replicas, InForce: inForce, Heal: time.Now()})
		met := true
		for _, k := range n {
			met = met && k > 0
		}
		if met {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}
