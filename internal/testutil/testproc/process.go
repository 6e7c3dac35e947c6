package testproc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Process is a server process started by Run. Its methods are safe for
// concurrent use.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Run starts cmd with its standard output and error appended to the file
// at logPath (created if need be) and returns once it has started. The
// process is reaped in the background: Exited is closed when it exits.
func Run(cmd *exec.Cmd, logPath string) (*Process, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// Kill sends SIGKILL, like a crash, and returns once the process has
// exited.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Signal sends sig to the process. For SIGSTOP it returns once every
// thread of the process has stopped (bounded by 5 s): kill(2) returns
// before the stop takes effect, and a JVM's threads may still answer a
// request in between.
func (p *Process) Signal(sig syscall.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil {
		return err
	}
	if sig == syscall.SIGSTOP {
		return awaitStopped(p.cmd.Process.Pid, 5*time.Second)
	}
	return nil
}

// awaitStopped polls /proc until every thread of pid is stopped (state T
// or t), the process is gone, or timeout passes. Where /proc cannot be
// read it returns at once.
func awaitStopped(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		stopped, err := allStopped(pid)
		if err != nil || stopped {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d not stopped %v after SIGSTOP", pid, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// allStopped reports whether every thread of pid is stopped.
func allStopped(pid int) (bool, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(tasks) == 0 {
		return false, fmt.Errorf("no /proc tasks for %d", pid)
	}
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread exited
		}
		// The state follows the parenthesised command name.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			return false, fmt.Errorf("%s: no state", t)
		}
		if st := b[i+2]; st != 'T' && st != 't' {
			return false, nil
		}
	}
	return true, nil
}

// WaitReady calls ready every interval until it returns nil, the process
// exits, or timeout passes; the error then says which, with ready's last
// error.
func (p *Process) WaitReady(timeout, interval time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		last := ready()
		if last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("the server exited (last try: %w)", last)
		case <-time.After(interval):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within %v: %w", timeout, last)
		}
	}
}

// LogTail returns the last 4000 bytes of the log at path, trimmed of
// white space, for an error message; "" if it cannot be read.
func LogTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}

// Running holds a server's current process: none while it is stopped. The
// zero value holds none. Its methods are safe for concurrent use.
type Running struct {
	mu sync.Mutex
	p  *Process
}

// Set makes p the current process.
func (r *Running) Set(p *Process) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.p = p
}

// Kill kills the current process (SIGKILL, like a crash), if any, and
// returns once it has exited; then none is current.
func (r *Running) Kill() {
	r.mu.Lock()
	p := r.p
	r.p = nil
	r.mu.Unlock()
	if p != nil {
		p.Kill()
	}
}

// Signal sends sig to the current process; with none it does nothing and
// returns nil.
func (r *Running) Signal(sig syscall.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p == nil {
		return nil
	}
	return r.p.Signal(sig)
}
