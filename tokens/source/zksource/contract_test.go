package zksource_test

import (
	"testing"

	"github.com/fencegw/fencegw/internal/testutil/testzk"
	"github.com/fencegw/fencegw/tokens/source/sourcetest"
)

// TestContract runs the epoch source contract against elections in
// Curator's LeaderLatch form: one server for the subtests (each names its
// own elections), and a server of its own for the subtest that stops it.
func TestContract(t *testing.T) {
	srv := testzk.Start(t)
	sourcetest.Run(t, sourcetest.Harness{
		Shared: func(t *testing.T) *sourcetest.Backend { return backend(srv) },
		Own: func(t *testing.T) *sourcetest.Backend {
			own := testzk.Start(t)
			b := backend(own)
			b.Stop = func(*testing.T) { own.Stop() }
			b.Restart = func(*testing.T) { own.Restart() }
			return b
		},
	})
}
