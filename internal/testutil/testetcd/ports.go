package testetcd

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/fencegw/fencegw/internal/testutil/testproc"
)

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
	ports, err := testproc.FreePorts(1)
	if err != nil {
		tb.Fatalf("testetcd: %v", err)
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0])
}
