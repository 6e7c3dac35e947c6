package faults

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"sync"
	"syscall"
	"testing"
)

// slowLeader is a leader process (internal/testutil/testleader) whose clock runs at
// a quarter of real time: it renews its 2 s lease too late and believes it
// leads for 8 s, so its writes after the lapse must be refused. It leases
// through replica 0 and writes through replica 1; its writes reach the
// recording upstream (X-Holder node-slow) and so the exclusivity check.
type slowLeader struct {
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	// writes counts its writes by the status the gateway answered.
	writes map[int]int
	terms  int
}

func startSlowLeader(t *testing.T, c *cluster) *slowLeader {
	l := &slowLeader{done: make(chan struct{}), writes: map[int]int{}}
	l.cmd = exec.Command(leaderBinary, "--api", c.gateways[0].apiURL(), "--write", c.gateways[1].proxyURL()+"/w/op",
		"--lease", leaseName, "--holder", "node-slow", "--lease-duration", leaseTTL.String(), "--renew-deadline", "1500ms",
		"--retry", "100ms", "--job", "100ms", "--no-watch", "--clock-rate", "0.25")
	out, err := l.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var ev struct {
				Event  string `json:"event"`
				Status int    `json:"status"`
			}
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}
			l.mu.Lock()
			switch ev.Event {
			case "leading":
				l.terms++
			case "write":
				l.writes[ev.Status]++
			}
			l.mu.Unlock()
		}
	}()
	t.Cleanup(l.stop)
	return l
}

// stop ends the process (it may be stopped twice); a nil l does nothing.
func (l *slowLeader) stop() {
	if l == nil {
		return
	}
	l.cmd.Process.Signal(syscall.SIGKILL)
	<-l.done
	l.cmd.Wait()
}

// summary is how many terms it led and its writes by status; none for a
// nil l.
func (l *slowLeader) summary() (terms int, writes map[int]int) {
	if l == nil {
		return 0, map[int]int{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	w := map[int]int{}
	for k, v := range l.writes {
		w[k] = v
	}
	return l.terms, w
}
