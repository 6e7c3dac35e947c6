// Package testproc holds what the packages that run a server for tests
// (testpg, testredis, testzk, testkube, testetcd) share: free loopback
// ports, a server process with its log (Run), the reading of a server's log
// for a lost race for its port, and the CI rule for a server that cannot
// be had. Only tests and test helpers import it.
package testproc

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
)

// FreePorts returns n distinct loopback TCP ports that were free a moment
// ago. It holds all n listeners open at once so that no port repeats, then
// releases them for the server to bind.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("picking a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// LogSize is the length of the log at path (0 when there is none), so
// that LostPortRace reads only what a start wrote after it.
func LogSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// LostPortRace reports whether the log at path, from offset on (the first
// MiB of it), says the port was taken by someone else between FreePort and
// the server binding it, in any letter case.
func LostPortRace(path string, offset int64) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, offset, 1<<20))
	if err != nil {
		return false
	}
	return bytes.Contains(bytes.ToLower(b), []byte("address already in use"))
}

// Unavailable ends tb because what (a server) could not be had: it fails
// tb when the environment variable CI is "true", and skips it otherwise.
func Unavailable(tb testing.TB, what string, err error) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("%s unavailable: %v", what, err)
	}
	tb.Skipf("%s unavailable (set CI=true to fail instead): %v", what, err)
}
