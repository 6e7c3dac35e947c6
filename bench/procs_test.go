package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// proc is a process the benchmark started; it is killed at cleanup.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string // its combined output, kept in a file
}

// startProc starts cmd, logging to a file in dir, and kills it when b ends.
func startProc(b *testing.B, dir, name string, cmd *exec.Cmd) *proc {
	b.Helper()
	p := &proc{name: name, cmd: cmd, log: filepath.Join(dir, name+".log")}
	f, err := os.Create(p.log)
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		b.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); f.Close(); close(done) }()
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return p
}

// pid is the process's id (taskset execs the command in place).
func (p *proc) pid() int { return p.cmd.Process.Pid }

// memory is a process's resident memory, in bytes: all of it (VmRSS) and
// its anonymous part (RssAnon: the heap and stacks, without file pages
// such as the embedded store's memory-mapped file).
type memory struct{ rss, anon int64 }

// memory reads the process's resident memory from /proc.
func (p *proc) memory() (memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid()))
	if err != nil {
		return memory{}, err
	}
	var m memory
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			m.rss = kb << 10
		case "RssAnon:":
			m.anon = kb << 10
		}
	}
	if m.rss == 0 {
		return m, fmt.Errorf("no VmRSS for pid %d", p.pid())
	}
	return m, nil
}

// freeAddr returns a loopback address nobody listens on now.
func freeAddr(b *testing.B) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitHTTP waits until url answers at all.
func waitHTTP(b *testing.B, url string, p *proc) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	log, _ := os.ReadFile(p.log)
	b.Fatalf("%s did not answer at %s:\n%s", p.name, url, log)
}

// goBuild builds the package pkg of this module into dir.
func goBuild(b *testing.B, dir, pkg string) string {
	b.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build %s: %v\n%s", pkg, err, msg)
	}
	return out
}
