package pgstore_test

import (
	"testing"

	"github.com/fencegw/fencegw/internal/testutil/testleak"
	"github.com/fencegw/fencegw/internal/testutil/testpg"
)

// TestMain closes the shared cluster first, so that its helpers are gone
// too, then fails the tests if any goroutine outlives them.
func TestMain(m *testing.M) { testleak.Exit(testpg.Run(m), 0) }
