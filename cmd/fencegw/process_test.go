package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testetcd"
	"github.com/fencegw/fencegw/internal/testpg"
)

// binary is the fencegw executable built once for the process tests;
// leaderBinary is the test leader process (internal/testleader).
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
	build = exec.Command("go", "build", "-race", "-o", leaderBinary, "../../internal/testleader")
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

// proc is a running fencegw process.
type proc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	proxy  string // http://host:port
	api    string
	done   chan struct{}
	err    error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start runs `fencegw serve` with args plus fresh listen addresses, and
// waits until its control API answers.
func start(t *testing.T, args ...string) *proc {
	t.Helper()
	return startEnv(t, nil, args...)
}

// startEnv is start with extra environment variables (NAME=value).
func startEnv(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	proxyAddr, apiAddr := freeAddr(t), freeAddr(t)
	args = append([]string{"serve", "--listen", proxyAddr, "--api-listen", apiAddr}, args...)
	p := &proc{cmd: exec.Command(binary, args...), stderr: &syncBuffer{}, proxy: "http://" + proxyAddr,
		api: "http://" + apiAddr, done: make(chan struct{})}
	p.cmd.Stderr = p.stderr
	p.cmd.Env = append(os.Environ(), env...)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("fencegw stderr:\n%s", p.stderr.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.api + "/healthz")
		if err == nil {
			resp.Body.Close()
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("fencegw exited early: %v\n%s", p.err, p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("fencegw did not come up:\n%s", p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatal("fencegw did not exit")
	}
	return p.cmd.ProcessState.ExitCode()
}

func post(t *testing.T, url, token, resource string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader("x"))
	if token != "" {
		req.Header.Set("Fencing-Token", token)
	}
	if resource != "" {
		req.Header.Set("Fencing-Resource", resource)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func okUpstream(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.Close)
	return s
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

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// TestSIGTERMDrainsInFlight sends SIGTERM while a write is in flight: the
// write completes, and the process exits 0.
func TestSIGTERMDrainsInFlight(t *testing.T) {
	entered := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		time.Sleep(time.Second)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer up.Close()
	p := start(t, "--store", filepath.Join(t.TempDir(), "s.db"), "--route", "/w/="+up.URL)
	status := make(chan int, 1)
	go func() { status <- post(t, p.proxy+"/w/x", "1", "r") }()
	<-entered
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
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
	if s := <-status; s != http.StatusAccepted {
		t.Fatalf("in-flight write = %d, want 202", s)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, p.stderr.String())
	}
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

// TestReplicaProcessesShareTheFence runs two gateway processes over one
// PostgreSQL database and one etcd cluster, opened from store URLs.
func TestReplicaProcessesShareTheFence(t *testing.T) {
	stores := map[string]func(t *testing.T) string{
		"postgres": func(t *testing.T) string { return testpg.Shared(t).NewDatabase(t) },
		"etcd": func(t *testing.T) string {
			return "etcd://" + strings.Join(testetcd.Start(t, 1).Endpoints(), ",")
		},
	}
	for name, storeURL := range stores {
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
				if !strings.Contains(line, `"epoch":2`) {
					t.Fatalf("fence = %s", line)
				}
			}
		})
	}
}
