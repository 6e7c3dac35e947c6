// Package testredis gives tests a throwaway Redis server: Debian's
// redis-server, started on a free loopback port with its data in a
// temporary directory and no persistence of its own (no RDB save points,
// no append-only file), and stopped when the test ends. StartDurable starts
// one whose every acknowledged write survives a SIGKILL (appendonly yes,
// appendfsync always).
//
// A Server can be stopped and restarted on the same port with its data, so
// that tests can take the server away from a client and bring it back; it
// can also be frozen (SIGSTOP) and resumed, or killed (SIGKILL) and
// restarted with what it had persisted.
// It never uses Redis's default port 6379, where a system service may run.
//
// When redis-server cannot be found or started, Start skips the test, or
// fails it if the environment variable CI is "true".
package testredis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencegw/fencegw/internal/testutil/testproc"
)

const (
	// readyTimeout bounds how long a start waits for the server to answer
	// PING.
	readyTimeout = 30 * time.Second
	// stopTimeout bounds how long Stop waits for the server to exit before
	// it kills it.
	stopTimeout = 15 * time.Second
	// startAttempts is how many free ports Start tries when another
	// process takes the chosen port first.
	startAttempts = 5
)

// Server is a redis-server process for one test. Its methods are safe for
// concurrent use; those that take no testing.TB fail the test that
// started the server.
type Server struct {
	tb      testing.TB
	bin     string
	dir     string // data directory: dump.rdb and the log
	logPath string
	port    int
	durable bool // appendonly yes, appendfsync always

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	paused bool          // SIGSTOP sent, no SIGCONT since
}

// Start starts a redis-server for tb on a free loopback port, with its
// data under tb.TempDir(), and waits until it answers PING. It stops the
// server when tb ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	return start(tb, false)
}

// StartDurable is Start with an append-only file synced on every write
// (appendonly yes, appendfsync always): every write the server
// acknowledged survives Kill and Restart.
func StartDurable(tb testing.TB) *Server {
	tb.Helper()
	return start(tb, true)
}

func start(tb testing.TB, durable bool) *Server {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		testproc.Unavailable(tb, "Redis", fmt.Errorf("no redis-server (install Debian's redis-server): %w", err))
	}
	dir := tb.TempDir() // before Cleanup(stop): cleanups run last-in first-out
	s := &Server{tb: tb, bin: bin, dir: dir, logPath: filepath.Join(dir, "redis.log"), durable: durable}
	tb.Cleanup(func() {
		if err := s.stop(false); err != nil {
			tb.Errorf("testredis: %v", err)
		}
	})
	for attempt := 1; ; attempt++ {
		if s.port, err = testproc.FreePort(); err != nil {
			testproc.Unavailable(tb, "Redis", err)
		}
		offset := testproc.LogSize(s.logPath)
		err = s.start()
		if err == nil {
			return s
		}
		if attempt == startAttempts || !testproc.LostPortRace(s.logPath, offset) {
			testproc.Unavailable(tb, "Redis", err)
		}
	}
}

// Addr returns the server's "127.0.0.1:port".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL returns a redis:// URL of the server's database 0.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Client returns a new client of the server's database 0, closed when tb
// ends. It retries nothing: a command fails at once when the server is
// down.
func (s *Server) Client(tb testing.TB) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DisableIdentity: true})
	tb.Cleanup(func() { c.Close() })
	return c
}

// Stop shuts the server down, keeping its data: it saves the dataset
// (SHUTDOWN SAVE) and waits until the process has exited. Open
// connections are cut and new ones refused until Restart. Stopping a
// stopped server does nothing.
func (s *Server) Stop() {
	s.tb.Helper()
	if err := s.stop(true); err != nil {
		s.tb.Fatalf("testredis: %v", err)
	}
}

// Restart starts the server again on the same port with the data Stop
// saved, stopping it first if it is running, and waits until it answers
// PING.
func (s *Server) Restart() {
	s.tb.Helper()
	if err := s.stop(true); err != nil {
		s.tb.Fatalf("testredis: %v", err)
	}
	deadline := time.Now().Add(readyTimeout)
	for {
		offset := testproc.LogSize(s.logPath)
		err := s.start()
		if err == nil {
			return
		}
		// The port may linger for a moment after the old process exited.
		if !testproc.LostPortRace(s.logPath, offset) || time.Now().After(deadline) {
			s.tb.Fatalf("testredis: restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Kill ends the server with SIGKILL, as a crash would, and waits until it
// has exited: what it had not persisted is lost (with StartDurable,
// nothing it acknowledged). Restart brings it back. Killing a stopped
// server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	cmd, exited := s.cmd, s.exited
	s.cmd, s.exited, s.paused = nil, nil, false
	select {
	case <-exited:
		return // it died on its own; do not signal a reused PID
	default:
	}
	cmd.Process.Kill()
	<-exited
}

// Pause freezes the server with SIGSTOP: connections stay open and
// commands wait unanswered until Resume. Pausing a stopped server does
// nothing.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP, true) }

// Resume lets a paused server run again (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT, false) }

func (s *Server) signal(sig syscall.Signal, paused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.tb.Errorf("testredis: %v: %v", sig, err)
		return
	}
	s.paused = paused
}

// start starts redis-server on s.port and waits until it answers PING.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	appendonly := []string{"--appendonly", "no"}
	if s.durable {
		appendonly = []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	cmd := exec.Command(s.bin, append([]string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--dir", s.dir,
		"--logfile", s.logPath,
		"--daemonize", "no",
	}, appendonly...)...)
	cmd.Dir = s.dir
	// Best effort against orphans if the test binary dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	if err := s.waitReady(); err != nil {
		s.stopLocked(false)
		return err
	}
	return nil
}

// waitReady polls until the server answers PING, exits, or readyTimeout
// passes. s.mu is held.
func (s *Server) waitReady() error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DisableIdentity: true})
	defer c.Close()
	deadline := time.Now().Add(readyTimeout)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("redis-server exited during startup: %v\n%s", s.cmd.ProcessState, s.tail())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		lastErr = c.Ping(ctx).Err()
		cancel()
		if lastErr == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("redis-server not ready after %v: %w\n%s", readyTimeout, lastErr, s.tail())
}

func (s *Server) stop(save bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked(save)
}

// stopLocked shuts the server down, with SHUTDOWN SAVE when save is set
// and SHUTDOWN NOSAVE otherwise, and waits for it to exit, killing it
// after stopTimeout. It is a no-op when the server is not running. s.mu
// is held.
func (s *Server) stopLocked(save bool) error {
	if s.cmd == nil {
		return nil
	}
	cmd, exited := s.cmd, s.exited
	s.cmd, s.exited = nil, nil
	select {
	case <-exited:
		return nil // it died on its own; do not signal a reused PID
	default:
	}
	if s.paused {
		cmd.Process.Signal(syscall.SIGCONT) // a frozen server answers no SHUTDOWN
		s.paused = false
	}
	how := "NOSAVE"
	if save {
		how = "SAVE"
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DisableIdentity: true})
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	// The server closes the connection instead of answering.
	err := c.Do(ctx, "SHUTDOWN", how).Err()
	cancel()
	c.Close()
	if err != nil && !isClosedConn(err) {
		cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-exited:
		if save && err != nil && !isClosedConn(err) {
			return fmt.Errorf("SHUTDOWN SAVE: %w\n%s", err, s.tail())
		}
		return nil
	case <-time.After(stopTimeout):
	}
	cmd.Process.Kill()
	<-exited
	return fmt.Errorf("redis-server did not stop within %v; killed\n%s", stopTimeout, s.tail())
}

// isClosedConn reports whether err is the connection closing under a
// command, as it does under SHUTDOWN.
func isClosedConn(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET)
}

// tail returns the end of the server's log, for error messages.
func (s *Server) tail() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
