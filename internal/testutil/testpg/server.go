package testpg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegw/fencegw/internal/testutil/testproc"
)

const (
	// pgRoot holds one directory per installed major version (Debian layout).
	pgRoot = "/usr/lib/postgresql"
	// readyTimeout bounds how long start waits for the server to accept
	// connections.
	readyTimeout = 60 * time.Second
	// stopTimeout bounds how long stop waits after SIGQUIT before SIGKILL.
	stopTimeout = 15 * time.Second
	// startAttempts is how many free ports newServer tries when another
	// process takes the chosen port first.
	startAttempts = 5
)

// server is an owned PostgreSQL cluster. Its methods are not safe for
// concurrent use; Cluster serialises them.
type server struct {
	binDir  string
	dir     string // temporary directory: socket, logs, data
	dataDir string
	logPath string
	port    int
	// asUser is set when running as root: initdb and postgres refuse root,
	// so they run as the postgres user through runuser.
	asUser *user.User

	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	logf   *os.File
}

// newServer creates a cluster in a new temporary directory, starts it on a
// free loopback port and waits until it accepts connections.
func newServer() (_ *server, err error) {
	binDir, err := findBinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "fencegw-testpg-")
	if err != nil {
		return nil, fmt.Errorf("testpg: %w", err)
	}
	s := &server{
		binDir:  binDir,
		dir:     dir,
		dataDir: filepath.Join(dir, "data"),
		logPath: filepath.Join(dir, "postgres.log"),
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("testpg: running as root needs a postgres user: %w", err)
		}
		s.asUser = u
		if err := s.chown(dir); err != nil {
			return nil, err
		}
	}
	if err := s.initdb(); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		if s.port, err = testproc.FreePort(); err != nil {
			return nil, fmt.Errorf("testpg: %w", err)
		}
		offset := testproc.LogSize(s.logPath)
		err = s.start()
		if err == nil {
			return s, nil
		}
		if attempt == startAttempts || !testproc.LostPortRace(s.logPath, offset) {
			return nil, err
		}
	}
}

// findBinDir returns the bin directory of the highest installed major
// version that has both initdb and postgres.
func findBinDir() (string, error) {
	entries, err := os.ReadDir(pgRoot)
	if err != nil {
		return "", fmt.Errorf("testpg: no PostgreSQL server binaries (install postgresql, or set %s): %w", envDSN, err)
	}
	type cand struct {
		major, minor int
		dir          string
	}
	var cands []cand
	for _, e := range entries {
		majorStr, minorStr, _ := strings.Cut(e.Name(), ".")
		major, err := strconv.Atoi(majorStr)
		if err != nil {
			continue
		}
		minor, _ := strconv.Atoi(minorStr)
		bin := filepath.Join(pgRoot, e.Name(), "bin")
		if isExecutable(filepath.Join(bin, "initdb")) && isExecutable(filepath.Join(bin, "postgres")) {
			cands = append(cands, cand{major, minor, bin})
		}
	}
	if len(cands) == 0 {
		return "", fmt.Errorf("testpg: no initdb and postgres under %s/*/bin (install postgresql, or set %s)", pgRoot, envDSN)
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].major != cands[j].major {
			return cands[i].major > cands[j].major
		}
		return cands[i].minor > cands[j].minor
	})
	return cands[0].dir, nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// command builds a command that runs as the postgres user when the process
// is root, and as the current user otherwise.
func (s *server) command(name string, args ...string) *exec.Cmd {
	path := filepath.Join(s.binDir, name)
	var cmd *exec.Cmd
	if s.asUser != nil {
		cmd = exec.Command("runuser", append([]string{"-u", s.asUser.Username, "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	// The postgres user may not be able to enter the caller's directory.
	cmd.Dir = s.dir
	cmd.Env = cleanEnv()
	return cmd
}

// cleanEnv is the environment without libpq and locale variables, which
// initdb and postgres would otherwise pick up.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C")
}

// chown gives path to the postgres user when running as root.
func (s *server) chown(path string) error {
	if s.asUser == nil {
		return nil
	}
	uid, err := strconv.Atoi(s.asUser.Uid)
	if err != nil {
		return fmt.Errorf("testpg: uid of %s: %w", s.asUser.Username, err)
	}
	gid, err := strconv.Atoi(s.asUser.Gid)
	if err != nil {
		return fmt.Errorf("testpg: gid of %s: %w", s.asUser.Username, err)
	}
	if err := os.Chown(path, uid, gid); err != nil {
		return fmt.Errorf("testpg: %w", err)
	}
	return nil
}

func (s *server) initdb() error {
	logPath := filepath.Join(s.dir, "initdb.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("testpg: %w", err)
	}
	defer logf.Close()
	cmd := s.command("initdb", "-D", s.dataDir, "--no-sync", "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("testpg: initdb in %s: %w\n%s", s.dataDir, err, tail(logPath))
	}
	return nil
}

// start starts postgres on s.port and waits until it accepts connections.
func (s *server) start() error {
	logf, err := os.OpenFile(s.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testpg: %w", err)
	}
	cmd := s.command("postgres",
		"-D", s.dataDir,
		"-p", strconv.Itoa(s.port),
		"-k", s.dir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Best effort against orphans if the test binary dies: runuser passes
	// SIGTERM on to postgres, and a postgres without a parent stops on it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("testpg: start postgres: %w", err)
	}
	s.cmd, s.logf = cmd, logf
	s.exited = make(chan struct{})
	go func(exited chan struct{}) {
		cmd.Wait()
		close(exited)
	}(s.exited)
	if err := s.waitReady(); err != nil {
		s.stop(false)
		return err
	}
	return nil
}

// waitReady polls until the server accepts a connection, exits, or
// readyTimeout passes.
func (s *server) waitReady() error {
	deadline := time.Now().Add(readyTimeout)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("testpg: postgres exited during startup: %v\n%s", s.cmd.ProcessState, tail(s.logPath))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgconn.Connect(ctx, s.dsn("postgres"))
		if err == nil {
			conn.Close(ctx)
			cancel()
			return nil
		}
		cancel()
		lastErr = err
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("testpg: postgres not ready after %v: %v\n%s", readyTimeout, lastErr, tail(s.logPath))
}

func (s *server) running() bool { return s.cmd != nil }

// stop shuts the server down with SIGQUIT (immediate shutdown) and waits
// for it to exit; it is a no-op when the server is not running. With keep,
// it first makes committed data survive (see checkpoint).
func (s *server) stop(keep bool) error {
	if s.cmd == nil {
		return nil
	}
	defer func() {
		s.logf.Close()
		s.cmd, s.logf = nil, nil
	}()
	select {
	case <-s.exited:
		return nil // it died on its own; do not signal a reused PID
	default:
	}
	if keep {
		s.checkpoint()
	}
	// Signal the postmaster itself: under runuser, cmd is runuser.
	pid := s.postmasterPID()
	if pid <= 0 && s.asUser == nil {
		pid = s.cmd.Process.Pid
	}
	if pid > 0 {
		syscall.Kill(pid, syscall.SIGQUIT)
	} else {
		s.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-s.exited:
		return nil
	case <-time.After(stopTimeout):
	}
	if pid > 0 {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	s.cmd.Process.Kill()
	<-s.exited
	return fmt.Errorf("testpg: postgres did not stop within %v of SIGQUIT; killed\n%s", stopTimeout, tail(s.logPath))
}

// kill SIGKILLs the postmaster, then every process left of the server, and
// waits until none is left: a crash, with no checkpoint and no flush of the
// WAL the server had not yet written. It removes the lock files the
// postmaster leaves behind, so that a recycled PID cannot stop the next
// start. It is a no-op when the server is not running.
func (s *server) kill() error {
	if s.cmd == nil {
		return nil
	}
	defer func() {
		s.logf.Close()
		s.cmd, s.logf = nil, nil
	}()
	dataDir, err := filepath.EvalSymlinks(s.dataDir)
	if err != nil {
		return fmt.Errorf("testpg: %w", err)
	}
	select {
	case <-s.exited: // it died on its own; do not signal a reused PID
	default:
		// The postmaster first: it would restart the backends it sees die.
		if pid := s.postmasterPID(); pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		} else if s.asUser == nil {
			s.cmd.Process.Kill()
		}
	}
	// Its backends notice its death only when they next wait; kill them too,
	// as a crash of the machine would. They are found by their working
	// directory, the data directory: they are no longer the postmaster's
	// children once it is gone.
	deadline := time.Now().Add(stopTimeout)
	for {
		pids := processesIn(dataDir)
		exited := false
		select {
		case <-s.exited:
			exited = true
		default:
		}
		if exited && len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			s.cmd.Process.Kill()
			return fmt.Errorf("testpg: processes %v of the killed server still there after %v", pids, stopTimeout)
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, lock := range []string{
		filepath.Join(s.dataDir, "postmaster.pid"),
		filepath.Join(s.dir, fmt.Sprintf(".s.PGSQL.%d.lock", s.port)),
	} {
		if err := os.Remove(lock); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("testpg: %w", err)
		}
	}
	return nil
}

// processesIn returns the live processes whose working directory is dir
// (which must have no symbolic links), as far as /proc lets this process
// see. Zombies have none: they hold no resources of the server any more.
func processesIn(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && cwd == dir {
			pids = append(pids, pid)
		}
	}
	return pids
}

// signalStandby makes the next start of the stopped server a hot standby's:
// it stays in recovery, read-only, until promoted.
func (s *server) signalStandby() error {
	signal := filepath.Join(s.dataDir, "standby.signal")
	if err := os.WriteFile(signal, nil, 0o600); err != nil {
		return fmt.Errorf("testpg: %w", err)
	}
	return s.chown(signal)
}

// checkpoint asks the server, best effort, to write out all WAL. The server
// runs with synchronous_commit=off, so a commit can be acknowledged before
// its WAL leaves shared memory, and an immediate shutdown would lose it; after
// a checkpoint, everything committed so far survives SIGQUIT.
func (s *server) checkpoint() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, s.dsn("postgres"))
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	conn.Exec(ctx, "CHECKPOINT").ReadAll()
}

// postmasterPID reads the postmaster's PID from its lock file, or returns 0.
func (s *server) postmasterPID() int {
	b, err := os.ReadFile(filepath.Join(s.dataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	pid, err := strconv.Atoi(strings.TrimSpace(string(line)))
	if err != nil {
		return 0
	}
	return pid
}

// destroy stops the server and removes its directory.
func (s *server) destroy() error {
	err := s.stop(false)
	if rmErr := os.RemoveAll(s.dir); rmErr != nil {
		err = errors.Join(err, fmt.Errorf("testpg: %w", rmErr))
	}
	return err
}

func (s *server) dsn(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, database)
}

// tail returns the last lines of a log file, for error messages.
func tail(path string) string {
	const max = 4 << 10
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if len(b) > max {
		b = b[len(b)-max:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return fmt.Sprintf("--- %s (tail) ---\n%s", path, strings.TrimRight(string(b), "\n"))
}
