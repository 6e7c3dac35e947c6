package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fencegw/fencegw/wire"

	bolt "go.etcd.io/bbolt"
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
		Epoch wire.Epoch `json:"epoch"`
	}
	postJSON(t, gw.api+"/v1/leases/jobs/acquire", `{"holder":"node-a","ttl_seconds":30}`, &l)
	postJSON(t, gw.api+"/v1/leases/jobs/renew", fmt.Sprintf(`{"holder":"node-a","epoch":%d}`, l.Epoch), &l)
	for _, want := range []string{"acquired", "renewed"} {
		select {
		case line := <-lines:
			var ev struct {
				Event  string     `json:"event"`
				Holder string     `json:"holder"`
				Epoch  wire.Epoch `json:"epoch"`
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Event != want || ev.Holder != "node-a" || ev.Epoch != l.Epoch {
				t.Fatalf("printed %q (%v), want a %s event", line, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s event printed", want)
		}
	}
}

// TestWatcherThatNeverReads: a watcher that stops reading cannot hold
// shutdown. With its socket's buffers full (a tiny receive buffer and
// 4,000 renewals of long-named events, some 2.5 MB, past the 4 MB the
// kernel queues for a small-write stream) the gateway's write to it
// blocks, and write_timeout is 5 minutes; on SIGTERM the process still
// exits 0 within shutdown_timeout plus slack, and the store file opens
// again at once (its lock was released).
func TestWatcherThatNeverReads(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gw.yaml")
	yml := "shutdown_timeout: 2s\nwatch:\n  write_timeout: 5m\nroutes:\n  - prefix: /w/\n    upstream: http://127.0.0.1:9\n"
	if err := os.WriteFile(cfg, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "s.db")
	gw := start(t, "--config", cfg, "--store", store)
	// Long names make long events: a few thousand fill the socket.
	name, holder := strings.Repeat("n", 250), strings.Repeat("h", 250)
	var l struct {
		Epoch wire.Epoch `json:"epoch"`
	}
	postJSON(t, gw.api+"/v1/leases/"+name+"/acquire", `{"holder":"`+holder+`","ttl_seconds":300}`, &l)
	conn := deafWatcher(t, strings.TrimPrefix(gw.api, "http://"), "/v1/leases/"+name+"/watch")
	defer conn.Close()
	body := fmt.Sprintf(`{"holder":%q,"epoch":%d}`, holder, l.Epoch)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				resp, err := http.Post(gw.api+"/v1/leases/"+name+"/renew", "application/json", strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	start := time.Now()
	if err := gw.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := gw.wait(t); code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, gw.stderr.String())
	}
	if took := time.Since(start); took > 2*time.Second+3*time.Second {
		t.Fatalf("exit took %s, want within shutdown_timeout 2s plus slack", took)
	}
	db, err := bolt.Open(store, 0o600, &bolt.Options{Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatalf("store file after exit: %v", err)
	}
	db.Close()
}

// deafWatcher opens a lease watch at path on addr over a socket with a
// tiny receive buffer, and never reads from it.
func deafWatcher(t *testing.T, addr, path string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024)
		})
		return errors.Join(err, serr)
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr); err != nil {
		t.Fatal(err)
	}
	return conn
}
