package testpg

import (
	"sync"
	"testing"

	"github.com/fencegw/fencegw/internal/testutil/testproc"
)

// shared is the cluster Shared hands out: one per test binary.
var shared struct {
	once sync.Once
	c    *Cluster
	err  error
}

// Shared returns the test binary's shared cluster, starting it (see Start)
// on first use. Tests that share it must isolate their state, normally with
// NewDatabase, and must not Stop it. If no cluster can be had, Shared fails
// tb when the environment variable CI is "true" and skips tb otherwise.
// TestMain should call CloseShared after the tests have run.
func Shared(tb testing.TB) *Cluster {
	tb.Helper()
	shared.once.Do(func() { shared.c, shared.err = Start() })
	if shared.err != nil {
		testproc.Unavailable(tb, "PostgreSQL", shared.err)
	}
	return shared.c
}

// CloseShared closes the shared cluster if Shared started it. Call it from
// TestMain after m.Run; later calls to Shared fail or skip.
func CloseShared() {
	shared.once.Do(func() { shared.err = errClosed })
	if shared.c != nil {
		shared.c.Close()
	}
}

// Run runs m's tests, then closes the shared cluster, and returns the code
// to exit with: TestMain's first step in a package whose tests use Shared.
func Run(m *testing.M) int {
	code := m.Run()
	CloseShared()
	return code
}

// Require starts a new owned cluster for tb alone, for tests that Stop and
// Restart it, and closes it when tb ends. It ignores
// FENCEGW_TEST_POSTGRES_DSN, so it needs the local server binaries. If the
// cluster cannot be started, Require fails tb when the environment variable
// CI is "true" and skips tb otherwise.
func Require(tb testing.TB) *Cluster {
	tb.Helper()
	c, err := startOwned()
	if err != nil {
		testproc.Unavailable(tb, "PostgreSQL", err)
	}
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Errorf("testpg: close cluster: %v", err)
		}
	})
	return c
}
