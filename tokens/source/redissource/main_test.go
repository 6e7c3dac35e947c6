package redissource_test

import (
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testleak"
)

// TestMain fails the tests if any goroutine outlives them (every Source
// and client must be closed), giving them a few seconds to wind down.
func TestMain(m *testing.M) { testleak.Exit(m.Run(), 5*time.Second) }
