// Package testkube gives tests a throwaway Kubernetes API server: a real
// kube-apiserver (see Binary for where it comes from) over an embedded etcd
// of its own (package testetcd), serving HTTPS on a loopback port with a
// self-signed certificate, a static admin token (system:masters) and
// AlwaysAllow authorization. It runs no controllers, scheduler or nodes:
// enough for objects such as Leases, which is all the tests need.
//
// When the binary is missing, Start skips the test, or fails it if the
// environment variable CI is "true".
//
// The methods of a Server must be called from the goroutine running the
// test that started it (or one of its subtests): on failure they call
// Fatalf on that test.
package testkube

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/internal/testutil/testproc"
)

const (
	// readyTimeout bounds every wait for the server's /readyz.
	readyTimeout = 120 * time.Second
	// startAttempts is how many free ports Start tries when another
	// process takes the port first.
	startAttempts = 3
)

// Server is a running (or stopped) kube-apiserver. Create it with Start.
type Server struct {
	tb    testing.TB
	dir   string
	bin   string
	etcd  string // the etcd client URL
	token string
	port  int

	proc testproc.Running
}

// Start starts an etcd and a kube-apiserver over it on a free loopback
// port, with its files under tb.TempDir(), and waits until /readyz
// answers ok; it writes a kubeconfig (Kubeconfig). Both are stopped at
// tb.Cleanup.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin, err := Binary()
	if err != nil {
		testproc.Unavailable(tb, "kube-apiserver", err)
	}
	etcd := testetcd.Start(tb, 1)
	s := &Server{tb: tb, dir: tb.TempDir(), bin: bin, etcd: "http://" + etcd.Endpoints()[0], token: randomToken()}
	tb.Cleanup(s.Stop) // before etcd's: cleanups run last-in first-out
	if err := writePKI(s.dir, s.token); err != nil {
		tb.Fatalf("testkube: %v", err)
	}
	for attempt := 1; ; attempt++ {
		if s.port, err = testproc.FreePort(); err != nil {
			tb.Fatalf("testkube: %v", err)
		}
		offset := testproc.LogSize(s.logPath())
		err = s.start()
		if err == nil {
			break
		}
		if attempt == startAttempts || !testproc.LostPortRace(s.logPath(), offset) {
			tb.Fatalf("testkube: %v", err)
		}
	}
	if err := writeKubeconfig(s.dir, s.Host(), s.token); err != nil {
		tb.Fatalf("testkube: %v", err)
	}
	return s
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Host returns the server's URL, "https://127.0.0.1:PORT"; it stays the
// same across Stop and Restart.
func (s *Server) Host() string { return fmt.Sprintf("https://127.0.0.1:%d", s.port) }

// Kubeconfig returns the path of a kubeconfig whose current context is
// the server with its admin token.
func (s *Server) Kubeconfig() string { return filepath.Join(s.dir, kubeconfig) }

// RESTConfig returns a client configuration for the server as admin.
func (s *Server) RESTConfig() *rest.Config {
	ca, err := os.ReadFile(filepath.Join(s.dir, certFile))
	if err != nil {
		s.tb.Fatalf("testkube: %v", err)
	}
	return &rest.Config{Host: s.Host(), BearerToken: s.token, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

// args are kube-apiserver's flags: only what serving objects needs.
func (s *Server) args() []string {
	f := func(name string) string { return filepath.Join(s.dir, name) }
	return []string{
		"--etcd-servers=" + s.etcd,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", s.port),
		"--cert-dir=" + f("certs"),
		"--tls-cert-file=" + f(certFile),
		"--tls-private-key-file=" + f(keyFile),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + f(saKeyFile),
		"--service-account-signing-key-file=" + f(saKeyFile),
		"--token-auth-file=" + f(tokensFile),
		"--authorization-mode=AlwaysAllow",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--enable-admission-plugins=NamespaceLifecycle",
		"--disable-admission-plugins=ServiceAccount",
		"--enable-priority-and-fairness=false",
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	}
}

// start runs the server and waits until it is ready; its output goes to
// the log in the server's directory, whose end is quoted when it does not
// come up.
func (s *Server) start() error {
	cmd := exec.Command(s.bin, s.args()...)
	cmd.Dir = s.dir
	p, err := testproc.Run(cmd, s.logPath())
	if err != nil {
		return fmt.Errorf("starting kube-apiserver: %w", err)
	}
	s.proc.Set(p)
	if err := s.waitReady(p); err != nil {
		s.Stop()
		return fmt.Errorf("kube-apiserver on %s: %w\n%s", s.Host(), err, testproc.LogTail(s.logPath()))
	}
	return nil
}

func (s *Server) logPath() string { return filepath.Join(s.dir, logFile) }

// Stop kills the server (SIGKILL, like a crash) and returns once it has
// exited; etcd and its data stay for Restart. Its clients' connections are
// cut and new ones are refused. Stopping a stopped server does nothing.
func (s *Server) Stop() { s.proc.Kill() }

// Restart starts the server again on the same port, certificate and etcd,
// stopping it first if it runs, and waits until it is ready.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.tb.Fatalf("testkube: restart: %v", err)
	}
}
