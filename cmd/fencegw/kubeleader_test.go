package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testkube"
)

// kubeleader is a running examples/kubeleader process.
type kubeleader struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

// buildKubeleader builds examples/kubeleader into dir.
func buildKubeleader(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "kubeleader")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/kubeleader").CombinedOutput(); err != nil {
		t.Fatalf("build examples/kubeleader: %v\n%s", err, out)
	}
	return bin
}

// startKubeleader runs the example leader as id, with leaderelection's
// timings shortened (3 s lease, 2 s renew deadline, 250 ms retry) and a
// write every 100 ms; it is killed when t ends.
func startKubeleader(t *testing.T, bin, kubeconfig, write, id string) *kubeleader {
	t.Helper()
	l := &kubeleader{out: &syncBuffer{}, done: make(chan struct{})}
	l.cmd = exec.Command(bin, "-kubeconfig", kubeconfig, "-lease", "kubeleader", "-id", id, "-write", write,
		"-lease-duration", "3s", "-renew-deadline", "2s", "-retry-period", "250ms", "-interval", "100ms")
	l.cmd.Stdout, l.cmd.Stderr = l.out, l.out
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = l.cmd.Wait(); close(l.done) }()
	t.Cleanup(func() {
		_ = l.cmd.Process.Signal(syscall.SIGCONT)
		_ = l.cmd.Process.Kill()
		<-l.done
		if t.Failed() {
			t.Logf("kubeleader %s:\n%s", id, l.out.String())
		}
	})
	return l
}

// await fails t unless the leader prints line within d.
func (l *kubeleader) await(t *testing.T, line string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(l.out.String(), line) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q within %v", line, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestKubeLeaderExample runs two instances of examples/kubeleader against
// a real kube-apiserver and fencegw: the first leads at epoch 0 and its
// writes are admitted; frozen past its Lease (SIGSTOP), it loses the Lease
// to the second, whose writes at epoch 1 are admitted; thawed, the first's
// token is refused, and the upstream never sees epoch 0 after epoch 1.
func TestKubeLeaderExample(t *testing.T) {
	srv := testkube.Start(t)
	gw, up := startWithEpochSource(t, "/jobs/", "kubeleader",
		`{kind: kubernetes, kubeconfig: "`+srv.Kubeconfig()+`", lease: kubeleader}`)
	send := gw.proxy + "/jobs/run"
	bin := buildKubeleader(t, t.TempDir())

	a := startKubeleader(t, bin, srv.Kubeconfig(), send, "node-a")
	a.await(t, "leading epoch=0", 30*time.Second)
	a.await(t, "write epoch=0 status=204", 10*time.Second)
	b := startKubeleader(t, bin, srv.Kubeconfig(), send, "node-b")
	time.Sleep(time.Second)
	if strings.Contains(b.out.String(), "leading") {
		t.Fatal("node-b leads while node-a renews its Lease")
	}

	_ = a.cmd.Process.Signal(syscall.SIGSTOP) // node-a stalls past its Lease
	b.await(t, "write epoch=1 status=204", 30*time.Second)
	expectWrite(t, send, 0, 412, "node-a's token, after node-b took over")
	_ = a.cmd.Process.Signal(syscall.SIGCONT)
	a.await(t, "stopped leading", 30*time.Second)
	select {
	case <-a.done:
	case <-time.After(10 * time.Second):
		t.Fatal("node-a did not exit after it stopped leading")
	}
	// Until leaderelection tells it (RenewDeadline on its own clock),
	// node-a believes it leads and writes on: the gateway refuses them.
	stale := 0
	for _, line := range strings.Split(a.out.String(), "\n") {
		if strings.HasPrefix(line, "write epoch=0 status=") && line != "write epoch=0 status=204" {
			if line != "write epoch=0 status=412" {
				t.Fatalf("node-a's stale write answered %q, want 412", line)
			}
			stale++
		}
	}
	t.Logf("node-a wrote %d times after the thaw before it noticed; all refused with 412", stale)
	seen1 := false
	for _, e := range up.values("Fencing-Epoch") {
		seen1 = seen1 || e == "1"
		if seen1 && e == "0" {
			t.Fatalf("the upstream received epoch 0 after epoch 1: %v", up.values("Fencing-Epoch"))
		}
	}
	if !seen1 {
		t.Fatal("the upstream never received node-b's writes")
	}
}
