package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// probeRun runs `fencegw probe args…` with extra environment variables
// (NAME=value).
func probeRun(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"probe"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), exitCode(err)
}

// wantNotReady checks a probe that failed: exit 1, nothing on stdout, one
// line on stderr holding every one of want.
func wantNotReady(t *testing.T, what string, stdout, stderr string, code int, want ...string) {
	t.Helper()
	if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "fencegw probe: ") {
		t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and one line on stderr", what, code, stdout, stderr)
		return
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%s: stderr %q lacks %q", what, stderr, w)
		}
	}
}

// holdingListener accepts connections, never answers them, and counts them.
type holdingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newHoldingListener(t *testing.T) *holdingListener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &holdingListener{Listener: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.conns = append(h.conns, c)
			h.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, c := range h.conns {
			c.Close()
		}
	})
	return h
}

func (h *holdingListener) accepted() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// TestProbeFlagsCheckedFirst: a bad flag fails the probe with one line on
// stderr, and nothing is dialled; a gateway that does not answer in
// --timeout, or does not listen, fails it too.
func TestProbeFlagsCheckedFirst(t *testing.T) {
	h := newHoldingListener(t)
	api := "http://" + h.Addr().String()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--api", api, "--path", "readyz"}, `--path "readyz"`},
		{[]string{"--api", api, "--path", "/readyz?x"}, "--path"},
		{[]string{"--api", api, "--timeout", "0s"}, "--timeout"},
		{[]string{"--api", api, "--timeout", "soon"}, "-timeout"},
		{[]string{"--api", api, "--bogus"}, "-bogus"},
		{[]string{"--api", api, "now"}, `unexpected argument "now"`},
		{[]string{"--api", h.Addr().String()}, "--api"},
		{[]string{"--api", api, "--tls-ca", "ca.pem"}, "not https"},
		{[]string{"--api", "https://" + h.Addr().String(), "--tls-cert", "c.pem"}, "--tls-cert and --tls-key"},
		{[]string{"--api", "https://" + h.Addr().String(), "--tls-ca", filepath.Join(t.TempDir(), "none.pem")}, "none.pem"},
	} {
		out, errOut, code := probeRun(t, nil, tc.args...)
		wantNotReady(t, strings.Join(tc.args, " "), out, errOut, code, tc.want)
	}
	if n := h.accepted(); n != 0 {
		t.Errorf("a probe with a bad flag dialled the control API (%d connections)", n)
	}

	// A control API that never answers: --timeout ends the check.
	begin := time.Now()
	out, errOut, code := probeRun(t, nil, "--api", api, "--timeout", "300ms")
	wantNotReady(t, "a silent control API", out, errOut, code, "not ready", "Timeout")
	if d := time.Since(begin); d > 2500*time.Millisecond {
		t.Errorf("the probe with --timeout 300ms took %s", d)
	}
	// Nothing listening.
	out, errOut, code = probeRun(t, nil, "--api", "http://"+freeAddr(t))
	wantNotReady(t, "nothing listening", out, errOut, code, "not ready", "connection refused")
}

// TestProbe: the probe passes against a ready gateway (--api or
// $FENCEGW_API, /readyz or /healthz), and fails while the gateway drains
// after SIGTERM, naming the reason.
func TestProbe(t *testing.T) {
	p := startHolding(t)

	for _, tc := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"--api", p.api}},
		{nil, []string{"--api", p.api + "/", "--path", "/healthz", "--timeout", "5s"}},
		{[]string{"FENCEGW_API=" + p.api}, nil},
	} {
		if out, errOut, code := probeRun(t, tc.env, tc.args...); code != 0 || out != "" || errOut != "" {
			t.Errorf("probe %v %v: exit %d, stdout %q, stderr %q; want 0 and silence", tc.env, tc.args, code, out, errOut)
		}
	}
	out, errOut, code := probeRun(t, nil, "--api", p.api, "--path", "/nowhere")
	wantNotReady(t, "--path /nowhere", out, errOut, code, "404")

	// SIGTERM with a write in flight: the gateway drains until the write
	// ends, and meanwhile the probe fails.
	p.sigtermMidWrite(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, errOut, code := probeRun(t, nil, "--api", p.api)
		if code != 0 {
			wantNotReady(t, "draining", out, errOut, code, "not ready", "503 Service Unavailable", "draining")
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the probe still passes while the gateway drains")
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.finish(t)
	out, errOut, code = probeRun(t, nil, "--api", p.api)
	wantNotReady(t, "stopped", out, errOut, code, "connection refused")
}
