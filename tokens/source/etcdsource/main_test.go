package etcdsource_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// leakGrace is how long TestMain lets goroutines wind down before calling
// them leaked: a stopped embedded etcd member can take up to rafthttp's 5 s
// connection read timeout to finish an in-flight peer request (see
// tokens/etcdstore/main_test.go).
const leakGrace = 10 * time.Second

// TestMain fails the package's tests if any goroutine outlives them: every
// client, session and embedded etcd member they start must be closed.
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
