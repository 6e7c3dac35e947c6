package testetcd

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
)

// freePorts returns n distinct loopback TCP ports that were free a moment
// ago. It holds all n listeners open at once so that no port repeats, then
// releases them for etcd to bind.
func freePorts(n int) ([]int, error) {
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

// isAddrInUse reports whether err comes from binding a port that something
// else holds.
func isAddrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// Unreachable returns a loopback "host:port" where nothing listened a
// moment ago: an endpoint of no cluster, for tests of clients that cannot
// reach one.
func Unreachable(tb testing.TB) string {
	tb.Helper()
	ports, err := freePorts(1)
	if err != nil {
		tb.Fatalf("testetcd: %v", err)
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0])
}
