package source

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// coalesced read must have ended.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
