// Package testzk gives tests a throwaway standalone ZooKeeper server.
//
// It starts the server from Debian's zookeeper package (the class
// org.apache.zookeeper.server.quorum.QuorumPeerMain in
// /usr/share/java/zookeeper.jar, whose manifest names its dependencies, run
// by the java on the PATH), or from the jar named by the environment
// variable FENCEGW_TEST_ZOOKEEPER_JAR. Each Server has its own
// configuration and data directory under the test's TempDir and listens on
// a loopback port picked once at Start and kept across Stop and Restart,
// with short ticks and no fsync: it is fast to start, and durable only
// across restarts within one test, which is all a test needs.
//
// When the jar or java is missing, Start skips the test, or fails it if the
// environment variable CI is "true".
//
// The methods of a Server must be called from the goroutine running the
// test that started it (or one of its subtests): on failure they call
// Fatalf on that test.
package testzk

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencegw/fencegw/internal/testutil/testproc"
)

const (
	envJar     = "FENCEGW_TEST_ZOOKEEPER_JAR"
	defaultJar = "/usr/share/java/zookeeper.jar"
	mainClass  = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

	// tickMs is the server's tick: sessions may last from 2 ticks to
	// maxSessionMs.
	tickMs       = 200
	maxSessionMs = 60000

	// readyTimeout bounds every wait for the server to answer.
	readyTimeout = 60 * time.Second
)

// Server is a running (or stopped) standalone ZooKeeper. Create it with
// Start.
type Server struct {
	tb   testing.TB
	dir  string
	addr string

	proc testproc.Running
}

// Start starts a server on a free loopback port, with its configuration
// and data under tb.TempDir(), and waits until it answers "ruok". The
// server is killed at tb.Cleanup.
func Start(tb testing.TB) *Server {
	tb.Helper()
	java, jar, err := binaries()
	if err != nil {
		testproc.Unavailable(tb, "ZooKeeper", err)
	}
	dir := tb.TempDir() // before Cleanup(Stop): cleanups run last-in first-out
	s := &Server{tb: tb, dir: dir}
	tb.Cleanup(s.Stop)
	port, err := testproc.FreePort()
	if err != nil {
		tb.Fatalf("testzk: %v", err)
	}
	s.addr = fmt.Sprintf("127.0.0.1:%d", port)
	if err := s.writeConfig(port); err != nil {
		tb.Fatalf("testzk: %v", err)
	}
	if err := s.start(java, jar); err != nil {
		tb.Fatalf("testzk: %v", err)
	}
	return s
}

// binaries finds java and the server jar.
func binaries() (java, jar string, err error) {
	jar = os.Getenv(envJar)
	if jar == "" {
		jar = defaultJar
	}
	if _, err := os.Stat(jar); err != nil {
		return "", "", fmt.Errorf("no ZooKeeper server jar (install Debian's zookeeper package or set %s): %w", envJar, err)
	}
	java, err = exec.LookPath("java")
	if err != nil {
		return "", "", fmt.Errorf("no java for the ZooKeeper server: %w", err)
	}
	return java, jar, nil
}

func (s *Server) writeConfig(port int) error {
	data := filepath.Join(s.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	cfg := strings.Join([]string{
		fmt.Sprintf("tickTime=%d", tickMs),
		"dataDir=" + data,
		fmt.Sprintf("clientPort=%d", port),
		"clientPortAddress=127.0.0.1",
		fmt.Sprintf("maxSessionTimeout=%d", maxSessionMs),
		"admin.enableServer=false",
		"4lw.commands.whitelist=ruok,srvr",
		"preAllocSize=1024",
		"",
	}, "\n")
	return os.WriteFile(filepath.Join(s.dir, "zoo.cfg"), []byte(cfg), 0o644)
}

// start runs the server and waits until it answers; its output goes to
// zookeeper.log in the server's directory, whose end is quoted when it
// does not come up.
func (s *Server) start(java, jar string) error {
	cmd := exec.Command(java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.forceSync=no", "-Dzookeeper.admin.enableServer=false",
		"-cp", jar, mainClass, filepath.Join(s.dir, "zoo.cfg"))
	cmd.Dir = s.dir
	log := filepath.Join(s.dir, "zookeeper.log")
	p, err := testproc.Run(cmd, log)
	if err != nil {
		return fmt.Errorf("starting ZooKeeper: %w", err)
	}
	s.proc.Set(p)
	// A loaded machine's JVM answers ruok well before it serves
	// sessions: ready is a session given.
	err = p.WaitReady(readyTimeout, 50*time.Millisecond, func() error {
		if !Ruok(s.addr) {
			return errors.New("no answer to ruok")
		}
		return hasSession(s.addr)
	})
	if err != nil {
		s.Stop()
		return fmt.Errorf("ZooKeeper on %s: %w\n%s", s.addr, err, testproc.LogTail(log))
	}
	return nil
}

// hasSession reports (nil) whether a client of addr gets a session within
// 10 s.
func hasSession(addr string) error {
	c, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer c.Close()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return nil
			}
		case <-timeout:
			return errors.New("no session within 10s")
		}
	}
}

// Ruok reports whether the server at addr answers the four-letter word
// "ruok" with "imok" within a second.
func Ruok(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("ruok")); err != nil {
		return false
	}
	buf := make([]byte, 4)
	n, _ := c.Read(buf)
	return string(buf[:n]) == "imok"
}

// Addr returns the server's client address, "127.0.0.1:PORT"; it stays
// the same across Stop and Restart.
func (s *Server) Addr() string { return s.addr }

// Servers returns the connect string's one server, Addr.
func (s *Server) Servers() []string { return []string{s.addr} }

// Stop kills the server (SIGKILL, like a crash) and returns once it has
// exited; its data stays for Restart. Its clients' connections are cut and
// new ones are refused. Stopping a stopped server does nothing.
func (s *Server) Stop() { s.proc.Kill() }

// Pause freezes the server with SIGSTOP: its clients' connections stay
// open and their requests and pings wait unanswered until Resume, so
// clients lose their connection after their read timeout, and sessions
// may expire when the server runs again. Pausing a stopped server does
// nothing.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume lets a paused server run again (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	if err := s.proc.Signal(sig); err != nil {
		s.tb.Errorf("testzk: %v: %v", sig, err)
	}
}

// Restart starts the server again on the same port and data directory,
// stopping it first if it runs, and waits until it answers. Sessions that
// did not expire while it was down are still there: their clients
// reconnect to them.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	java, jar, err := binaries()
	if err != nil {
		s.tb.Fatalf("testzk: %v", err)
	}
	if err := s.start(java, jar); err != nil {
		s.tb.Fatalf("testzk: restart: %v", err)
	}
}

// Conn returns a client connected to the server with a session of the
// given timeout, once it has its session; it is closed when tb ends. The
// client's own logs are discarded.
func (s *Server) Conn(tb testing.TB, sessionTimeout time.Duration) *zk.Conn {
	tb.Helper()
	c, events, err := zk.Connect(s.Servers(), sessionTimeout, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		tb.Fatalf("testzk: connect: %v", err)
	}
	tb.Cleanup(c.Close)
	deadline := time.After(readyTimeout)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return c
			}
		case <-deadline:
			tb.Fatalf("testzk: no session with %s within %v", s.addr, readyTimeout)
		}
	}
}

// quiet is a zk.Logger that discards everything.
type quiet struct{}

func (quiet) Printf(string, ...any) {}
