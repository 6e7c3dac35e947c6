package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// leaderProc is a running internal/testutil/testleader process and its events.
type leaderProc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	events []map[string]any
	done   chan struct{}
}

// startLeader runs internal/testutil/testleader for the lease invoice-sweeper with
// a 3 s lease and a 2 s renew deadline; extra flags come last and win.
func startLeader(t *testing.T, api, target, holder string, job time.Duration, extra ...string) *leaderProc {
	t.Helper()
	args := append([]string{"--api", api, "--write", target, "--lease", "invoice-sweeper",
		"--holder", holder, "--lease-duration", "3s", "--renew-deadline", "2s", "--retry", "500ms", "--job", job.String()}, extra...)
	p := &leaderProc{cmd: exec.Command(leaderBinary, args...), done: make(chan struct{})}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				p.mu.Lock()
				p.events = append(p.events, ev)
				p.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGCONT)
		p.cmd.Process.Kill()
		p.cmd.Wait()
		<-p.done
		if t.Failed() {
			t.Logf("%s events: %v", holder, p.snapshot())
		}
	})
	return p
}

func (p *leaderProc) snapshot() []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]map[string]any(nil), p.events...)
}

// await waits for an event matching match, bounded; it returns it.
func (p *leaderProc) await(t *testing.T, what string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, ev := range p.snapshot() {
			if match(ev) {
				return ev
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s: events %v", what, p.snapshot())
	return nil
}

func is(kind string, epoch float64) func(map[string]any) bool {
	return func(ev map[string]any) bool { return ev["event"] == kind && (epoch == 0 || ev["epoch"] == epoch) }
}

// arrival is one write as the upstream saw it.
type arrival struct {
	holder, epoch string
	at            time.Time
}

// arrivalUpstream is an upstream that answers 201 and notes each write's
// arrival; arrived returns those so far.
func arrivalUpstream(t *testing.T) (up *httptest.Server, arrived func() []arrival) {
	var mu sync.Mutex
	var arrivals []arrival
	up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		arrivals = append(arrivals, arrival{r.Header.Get("X-Holder"), r.Header.Get("Fencing-Epoch"), time.Now()})
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(up.Close)
	return up, func() []arrival {
		mu.Lock()
		defer mu.Unlock()
		return append([]arrival(nil), arrivals...)
	}
}

// writes counts the writes p reported.
func (p *leaderProc) writes() int {
	n := 0
	for _, ev := range p.snapshot() {
		if ev["event"] == "write" {
			n++
		}
	}
	return n
}

// TestSeedTimelineWithProcesses plays the seed article's timeline with real
// processes: node-a leads and writes; it is frozen with SIGSTOP past its
// lease; node-b takes over with a higher epoch; node-a wakes, its write is
// refused with 412 and it steps down; the upstream received nothing from
// node-a after the takeover.
func TestSeedTimelineWithProcesses(t *testing.T) {
	up, arrived := arrivalUpstream(t)
	gw := start(t, "--store", filepath.Join(t.TempDir(), "s.db"), "--signed-route", "/w/="+up.URL)

	a := startLeader(t, gw.api, gw.proxy+"/w/send", "node-a", 300*time.Millisecond)
	a.await(t, "node-a leading at epoch 1", is("leading", 1))
	a.await(t, "node-a's first write", func(ev map[string]any) bool { return ev["event"] == "write" && ev["status"] == 201.0 })
	// node-b's jobs are long: it has not written when node-a wakes, so
	// node-a's refusal comes from the grant alone (fence on grant).
	b := startLeader(t, gw.api, gw.proxy+"/w/send", "node-b", 3*time.Second)
	time.Sleep(1500 * time.Millisecond) // node-b campaigns while node-a renews
	for _, ev := range b.snapshot() {
		if ev["event"] == "leading" {
			t.Fatalf("node-b led while node-a renewed: %v", ev)
		}
	}

	// Freeze node-a between jobs (a pause strikes while it works, as in the
	// seed), not with a write in flight: right after a write returned, it
	// sleeps its 300 ms job before the next.
	seen := a.writes()
	a.await(t, "node-a's next write", func(map[string]any) bool { return a.writes() > seen })
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	takeover := b.await(t, "node-b's takeover at epoch 2", is("leading", 2))
	takeoverAt := time.UnixMilli(int64(takeover["at"].(float64)))
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	refused := a.await(t, "node-a's write refused with 412", func(ev map[string]any) bool {
		return ev["event"] == "write" && ev["epoch"] == 1.0 && ev["status"] == 412.0
	})
	for _, ev := range b.snapshot() {
		if ev["event"] == "write" && ev["at"].(float64) <= refused["at"].(float64) {
			t.Fatalf("node-b wrote before node-a's refusal; the test does not show fence on grant: %v", ev)
		}
	}
	a.await(t, "node-a stepping down", is("stopped", 1))
	b.await(t, "node-b's first write", func(ev map[string]any) bool { return ev["event"] == "write" && ev["status"] == 201.0 })
	time.Sleep(500 * time.Millisecond) // anything node-a still had in flight arrives

	arrivals := arrived()
	var fromA, fromB int
	for _, w := range arrivals {
		switch w.holder {
		case "node-a":
			fromA++
			if w.epoch != "1" || !w.at.Before(takeoverAt) {
				t.Errorf("node-a's write at epoch %s reached the upstream at %s, after the takeover at %s",
					w.epoch, w.at.Format(time.StampMilli), takeoverAt.Format(time.StampMilli))
			}
		case "node-b":
			fromB++
			if w.epoch != "2" {
				t.Errorf("node-b wrote at epoch %s", w.epoch)
			}
		}
	}
	if fromA == 0 || fromB == 0 {
		t.Fatalf("writes: %d from node-a, %d from node-b", fromA, fromB)
	}
	t.Logf("upstream: %d writes from node-a (all before the takeover), %d from node-b", fromA, fromB)
}

// TestSeedTimelineRealDurations plays the seed's timeline at its own
// scale: leases of 15 s, renew deadline 10 s, retry 2 s; node-a pauses
// from t=1 to t=21 (SIGSTOP, SIGCONT) while node-b campaigns. node-a's
// write when it wakes is refused with 412, and nothing of node-a's reaches
// the upstream after t=15, when its lease lapsed.
func TestSeedTimelineRealDurations(t *testing.T) {
	up, arrived := arrivalUpstream(t)
	gw := start(t, "--store", filepath.Join(t.TempDir(), "s.db"), "--signed-route", "/w/="+up.URL)
	seed := []string{"--lease-duration", "15s", "--renew-deadline", "10s", "--retry", "2s"}

	a := startLeader(t, gw.api, gw.proxy+"/w/send", "node-a", 200*time.Millisecond, seed...)
	lead := a.await(t, "node-a leading at epoch 1", is("leading", 1))
	t0 := time.UnixMilli(int64(lead["at"].(float64))) // the grant came before: its lease lapses by t0+15s
	b := startLeader(t, gw.api, gw.proxy+"/w/send", "node-b", 200*time.Millisecond, seed...)
	// t=1: node-a pauses between jobs, right after a write returned.
	time.Sleep(time.Until(t0.Add(800 * time.Millisecond)))
	seen := a.writes()
	a.await(t, "node-a's next write", func(map[string]any) bool { return a.writes() > seen })
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	b.await(t, "node-b's takeover at epoch 2", is("leading", 2))
	time.Sleep(time.Until(t0.Add(21 * time.Second)))
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	a.await(t, "node-a's write at t=21 refused with 412", func(ev map[string]any) bool {
		return ev["event"] == "write" && ev["epoch"] == 1.0 && ev["status"] == 412.0
	})
	time.Sleep(500 * time.Millisecond)

	arrivals := arrived()
	lapse := t0.Add(15 * time.Second)
	var fromA, fromB int
	for _, w := range arrivals {
		switch w.holder {
		case "node-a":
			fromA++
			if !w.at.Before(lapse) {
				t.Errorf("node-a's write reached the upstream at t=%s, after its lease lapsed at t=15s", w.at.Sub(t0))
			}
		case "node-b":
			fromB++
			if w.epoch != "2" || w.at.Before(lapse) {
				t.Errorf("node-b wrote at epoch %s at t=%s", w.epoch, w.at.Sub(t0))
			}
		}
	}
	if fromA == 0 || fromB == 0 {
		t.Fatalf("writes: %d from node-a, %d from node-b", fromA, fromB)
	}
	t.Logf("upstream: %d writes from node-a, all before t=15s; %d from node-b at epoch 2, from t=15s", fromA, fromB)
}
