package etcdsource_test

import (
	"testing"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/tokens/source/sourcetest"
)

// TestContract runs the epoch source contract against concurrency.Election
// campaigns: one single-member cluster for the subtests (each names its own
// elections), and a cluster of its own for the subtest that stops it.
func TestContract(t *testing.T) {
	c := testetcd.Start(t, 1)
	sourcetest.Run(t, sourcetest.Harness{
		Shared: func(t *testing.T) *sourcetest.Backend { return backend(t, c) },
		Own: func(t *testing.T) *sourcetest.Backend {
			own := testetcd.Start(t, 1)
			b := backend(t, own)
			b.Stop = func(*testing.T) { own.Stop() }
			b.Restart = func(*testing.T) { own.Restart() }
			return b
		},
	})
}
