package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestLeaseWatchCLI: `fencegw lease watch NAME` prints the lease's events
// as JSON lines as they come.
func TestLeaseWatchCLI(t *testing.T) {
	gw := start(t, "--store", filepath.Join(t.TempDir(), "s.db"), "--route", "/w/=http://127.0.0.1:9")
	cmd := exec.Command(binary, "lease", "watch", "jobs", "--api", gw.api)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	time.Sleep(500 * time.Millisecond) // the watch is open
	var l struct {
		Epoch int64 `json:"epoch"`
	}
	postJSON(t, gw.api+"/v1/leases/jobs/acquire", `{"holder":"node-a","ttl_seconds":30}`, &l)
	postJSON(t, gw.api+"/v1/leases/jobs/renew", fmt.Sprintf(`{"holder":"node-a","epoch":%d}`, l.Epoch), &l)
	for _, want := range []string{"acquired", "renewed"} {
		select {
		case line := <-lines:
			var ev struct {
				Event  string `json:"event"`
				Holder string `json:"holder"`
				Epoch  int64  `json:"epoch"`
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Event != want || ev.Holder != "node-a" || ev.Epoch != l.Epoch {
				t.Fatalf("printed %q (%v), want a %s event", line, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s event printed", want)
		}
	}
}
