package zksource_test

import (
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testleak"
)

// TestMain fails the tests if goroutines outlive them: every Source and
// client they open must be closed. A closing client waits up to a second
// for the server to confirm the end of its session, hence the grace.
func TestMain(m *testing.M) { testleak.Exit(m.Run(), 10*time.Second) }
