package etcdstore_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// leakGrace is how long TestMain lets goroutines wind down before calling
// them leaked. goleak's own retries last well under a second; a stopped
// embedded etcd member can take up to rafthttp's 5s connection read timeout
// to finish an in-flight peer HTTP request (its timeoutConn re-arms the read
// deadline that net/http sets to abort the connection's background read), so
// the peer connection's goroutines on both ends outlive Close by that much.
const leakGrace = 10 * time.Second

// TestMain fails the package's tests if any goroutine outlives them: every
// client and embedded etcd member they start must be closed. No goroutine is
// ignored; slow ones get leakGrace to finish.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		start := time.Now()
		for {
			err := goleak.Find()
			if err == nil {
				if waited := time.Since(start); waited > time.Second {
					fmt.Fprintf(os.Stderr, "goleak: background goroutines took %v to end\n", waited.Round(time.Millisecond))
				}
				break
			}
			if time.Since(start) > leakGrace {
				fmt.Fprintf(os.Stderr, "goleak: goroutines still running %v after the tests: %v\n", leakGrace, err)
				code = 1
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	os.Exit(code)
}
