package tokens_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines behind, such as a
// confirmation round that never ends.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
