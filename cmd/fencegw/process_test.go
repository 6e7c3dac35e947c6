package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/internal/testutil/testpg"
)

// binary is the fencegw executable built once for the process tests;
// leaderBinary is the test leader process (internal/testutil/testleader).
var binary, leaderBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fencegw-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "fencegw")
	build := exec.Command("go", "build", "-race", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build fencegw:", err)
		os.Exit(1)
	}
	leaderBinary = filepath.Join(dir, "testleader")
	build = exec.Command("go", "build", "-race", "-o", leaderBinary, "../../internal/testutil/testleader")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build testleader:", err)
		os.Exit(1)
	}
	code := m.Run()
	testpg.CloseShared()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestBadConfigRefusedBeforeListening(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "bad.yaml")
	addr := freeAddr(t)
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
listen: %q
routes:
  - prefix: "/a/"
    upstream: "http://127.0.0.1:9"
  - prefix: "/b/"
    upstream: "not-a-url"
`, addr)), 0o600)
	out, err := exec.Command(binary, "serve", "--config", cfg, "--store", filepath.Join(dir, "s.db")).CombinedOutput()
	if code := exitCode(err); code != 2 {
		t.Fatalf("exit %d, want 2\n%s", code, out)
	}
	if !strings.Contains(string(out), "routes[1].upstream: not an absolute http(s) URL") {
		t.Fatalf("message does not name the field:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "s.db")); err == nil {
		t.Fatal("a refused config still created the store file")
	}
	for args, want := range map[string]string{
		"serve --route nope":                         "want PREFIX=UPSTREAM",
		"serve --store redis://x --route /=http://a": "store: unknown store URL scheme",
		"serve":                            "routes: at least one route is required",
		"serve --config /nonexistent.yaml": "no such file",
		"frobnicate":                       "unknown command",
	} {
		out, err := exec.Command(binary, strings.Fields(args)...).CombinedOutput()
		if exitCode(err) == 0 || !strings.Contains(string(out), want) {
			t.Errorf("fencegw %s: exit %d\n%s\nwant %q", args, exitCode(err), out, want)
		}
	}
}

// TestSIGTERMDrainsInFlight sends SIGTERM while a write is in flight: the
// write completes, and the process exits 0.
func TestSIGTERMDrainsInFlight(t *testing.T) {
	p := startHolding(t)
	p.sigtermMidWrite(t)
	// While the write drains, the gateway says it is not ready.
	deadline := time.Now().Add(500 * time.Millisecond)
	for {
		resp, err := http.Get(p.api + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz did not turn 503 during the drain")
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.finish(t)
	if !strings.Contains(p.stderr.String(), "stopped cleanly") {
		t.Fatalf("no clean stop logged:\n%s", p.stderr.String())
	}
}

// TestKilledGatewayKeepsHWM kills the gateway with SIGKILL and starts it
// again on the same embedded store.
func TestKilledGatewayKeepsHWM(t *testing.T) {
	up := okUpstream(t)
	db := filepath.Join(t.TempDir(), "s.db")
	p := start(t, "--store", db, "--route", "/w/="+up.URL)
	for _, e := range []string{"9", "10"} {
		if s := post(t, p.proxy+"/w/x", e, "r"); s != http.StatusNoContent {
			t.Fatalf("epoch %s = %d", e, s)
		}
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)
	p2 := start(t, "--store", db, "--route", "/w/="+up.URL)
	if s := post(t, p2.proxy+"/w/x", "9", "r"); s != http.StatusPreconditionFailed {
		t.Fatalf("after SIGKILL and restart, epoch 9 = %d, want 412", s)
	}
	if s := post(t, p2.proxy+"/w/x", "10", "r"); s != http.StatusNoContent {
		t.Fatalf("after restart, epoch 10 = %d", s)
	}
}

// sharedStores start a fresh store that replicas can share, by name, and
// return its store URL.
var sharedStores = map[string]func(t *testing.T) string{
	"postgres": func(t *testing.T) string { return testpg.Shared(t).NewDatabase(t) },
	"etcd": func(t *testing.T) string {
		return "etcd://" + strings.Join(testetcd.Start(t, 1).Endpoints(), ",")
	},
}

// TestReplicaProcessesShareTheFence runs two gateway processes over one
// PostgreSQL database and one etcd cluster, opened from store URLs.
func TestReplicaProcessesShareTheFence(t *testing.T) {
	for name, storeURL := range sharedStores {
		t.Run(name, func(t *testing.T) {
			up := okUpstream(t)
			store := storeURL(t)
			a := start(t, "--store", store, "--route", "/w/="+up.URL)
			b := start(t, "--store", store, "--route", "/w/="+up.URL)
			steps := []struct {
				p      *proc
				epoch  string
				status int
			}{
				{a, "1", 204}, {b, "2", 204}, {a, "1", 412}, {a, "2", 204}, {b, "1", 412},
			}
			for i, s := range steps {
				if got := post(t, s.p.proxy+"/w/x", s.epoch, "shared"); got != s.status {
					t.Fatalf("step %d: epoch %s = %d, want %d", i, s.epoch, got, s.status)
				}
			}
			// Both replicas report the same fence.
			for _, p := range []*proc{a, b} {
				resp, err := http.Get(p.api + "/v1/fences/shared")
				if err != nil {
					t.Fatal(err)
				}
				line, _ := bufio.NewReader(resp.Body).ReadString('\n')
				resp.Body.Close()
				if !strings.Contains(line, `"epoch":"2"`) {
					t.Fatalf("fence = %s", line)
				}
			}
		})
	}
}
