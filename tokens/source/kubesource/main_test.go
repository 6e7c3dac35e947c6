package kubesource_test

import (
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testleak"
)

// TestMain fails the tests if goroutines outlive them: every Source and
// client they open must be closed.
func TestMain(m *testing.M) { testleak.Exit(m.Run(), 10*time.Second) }
