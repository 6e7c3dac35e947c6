package testkube

import (
	"path/filepath"
	"syscall"
)

// Pause freezes the server with SIGSTOP: connections stay open and
// requests wait unanswered until Resume. Pausing a stopped server does
// nothing; Stop and Restart work on a paused one (SIGKILL ends a frozen
// process too).
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume lets a paused server run again (SIGCONT). Resuming a server that
// runs or is stopped does nothing.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

// signal sends sig to the running server, if any.
func (s *Server) signal(sig syscall.Signal) {
	if err := s.proc.Signal(sig); err != nil {
		s.tb.Errorf("testkube: %v: %v", sig, err)
	}
}

// KubeconfigVia writes a kubeconfig like Kubeconfig's whose server is
// https://addr instead — a TCP proxy in front of the server, say: the
// serving certificate, for 127.0.0.1 and localhost, still verifies
// through a proxy on either — and returns its path, a new file under the
// test's temporary directory.
func (s *Server) KubeconfigVia(addr string) string {
	dir := s.tb.TempDir()
	if err := copyFile(filepath.Join(s.dir, certFile), filepath.Join(dir, certFile)); err != nil {
		s.tb.Fatalf("testkube: %v", err)
	}
	if err := writeKubeconfig(dir, "https://"+addr, s.token); err != nil {
		s.tb.Fatalf("testkube: %v", err)
	}
	return filepath.Join(dir, kubeconfig)
}
