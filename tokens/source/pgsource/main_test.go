package pgsource_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fencegw/fencegw/internal/testpg"
)

// TestMain stops the shared cluster after the tests, then fails them if any
// goroutine outlives them (every Source must be closed). Goroutines get a
// few seconds to wind down.
func TestMain(m *testing.M) {
	code := m.Run()
	testpg.CloseShared()
	if code == 0 {
		deadline := time.Now().Add(5 * time.Second)
		for {
			err := goleak.Find()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
				code = 1
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	os.Exit(code)
}
