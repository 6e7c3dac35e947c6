package pgsource_test

import (
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testleak"
	"github.com/fencegw/fencegw/internal/testutil/testpg"
)

// TestMain fails the tests if any goroutine outlives them and the shared
// cluster (every Source must be closed), giving them a few seconds to wind
// down.
func TestMain(m *testing.M) { testleak.Exit(testpg.Run(m), 5*time.Second) }
