package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testredis"
)

// redisCLI runs a command with redis-cli against addr, standing in for an
// application that keeps its own Redis lock, and returns its raw output.
func redisCLI(t *testing.T, addr string, args ...string) string {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	out, err := exec.Command("redis-cli", append([]string{"-h", host, "-p", port, "--no-raw"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestBringYourOwnRedisLock fences writes of leaders that take a Redis lock
// with the documented recipe, driven by redis-cli, through a raw route whose
// epoch source is that lock; with Redis down, writes are refused with 503
// and Retry-After and nothing is forwarded, and they are admitted again
// once it is back.
func TestBringYourOwnRedisLock(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-cli is required")
		}
		t.Skip("redis-cli not installed")
	}
	srv := testredis.Start(t)
	addr := srv.Addr()
	const key = "fencegw:nightly-report"
	acquire := func() (int64, bool) {
		e, err := strconv.ParseInt(strings.TrimPrefix(redisCLI(t, addr, "INCR", key+":epoch"), "(integer) "), 10, 64)
		if err != nil {
			t.Fatalf("INCR: %v", err)
		}
		return e, redisCLI(t, addr, "SET", key, strconv.FormatInt(e, 10), "NX", "PX", "60000") == "OK"
	}

	gw, up := startWithEpochSource(t, "/reports/", "nightly-report", fmt.Sprintf("{kind: redis, address: %q}", addr))
	send := gw.proxy + "/reports/run"

	expectWrite(t, send, 1, http.StatusPreconditionFailed, "before any leader")
	e1, ok := acquire()
	if !ok {
		t.Fatalf("node-a did not take the lock at epoch %d", e1)
	}
	expectWrite(t, send, e1, http.StatusNoContent, "node-a's")
	expectWrite(t, send, e1+1, http.StatusForbidden, "never issued")
	if e, ok := acquire(); ok {
		t.Fatalf("node-b took the lock at epoch %d while node-a held it", e)
	}
	redisCLI(t, addr, "PEXPIRE", key, "1") // node-a stopped renewing
	time.Sleep(10 * time.Millisecond)
	expectWrite(t, send, e1, http.StatusPreconditionFailed, "node-a's, after its lock expired")
	e2, ok := acquire()
	if !ok || e2 <= e1 {
		t.Fatalf("node-b took over at epoch %d (%v), want above %d", e2, ok, e1)
	}
	expectWrite(t, send, e1, http.StatusPreconditionFailed, "node-a's, after the takeover")
	expectWrite(t, send, e2, http.StatusNoContent, "node-b's")

	srv.Stop()
	req, _ := http.NewRequest("POST", send, strings.NewReader("x"))
	req.Header.Set("Fencing-Token", strconv.FormatInt(e2, 10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("write with Redis down = %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	srv.Restart()
	deadline := time.Now().Add(15 * time.Second)
	for post(t, send, strconv.FormatInt(e2, 10), "") != http.StatusNoContent {
		if time.Now().After(deadline) {
			t.Fatal("node-b's writes still refused 15 s after Redis came back")
		}
		time.Sleep(100 * time.Millisecond)
	}
	want := []string{strconv.FormatInt(e1, 10), strconv.FormatInt(e2, 10), strconv.FormatInt(e2, 10)}
	if got := up.values("Fencing-Epoch"); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("upstream received epochs %v, want %v", got, want)
	}
}
