package tokens_test

import (
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testleak"
	"github.com/fencegw/fencegw/internal/testutil/testpg"
)

// TestMain fails the package if a test leaves goroutines behind, such as a
// confirmation round that never ends, once the shared PostgreSQL cluster
// (started only by the benchmarks) is stopped.
func TestMain(m *testing.M) { testleak.Exit(testpg.Run(m), 5*time.Second) }
