package pgsource_test

import (
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testleak"
	"github.com/fencegw/fencegw/internal/testpg"
)

// TestMain stops the shared cluster after the tests, then fails them if any
// goroutine outlives them (every Source must be closed). Goroutines get a
// few seconds to wind down.
func TestMain(m *testing.M) {
	code := m.Run()
	testpg.CloseShared()
	testleak.Exit(code, 5*time.Second)
}
