package pgsource_test

import (
	"testing"

	"github.com/fencegw/fencegw/internal/testutil/testpg"
	"github.com/fencegw/fencegw/tokens/source/sourcetest"
)

// TestContract runs the epoch source contract against the seed's lease
// table, driven with the seed's own statements: a new database per subtest
// on the shared cluster, and a cluster of its own for the subtest that
// stops the server.
func TestContract(t *testing.T) {
	sourcetest.Run(t, sourcetest.Harness{
		Shared: func(t *testing.T) *sourcetest.Backend { return backend(t, testpg.Shared(t)) },
		Own: func(t *testing.T) *sourcetest.Backend {
			cl := testpg.Require(t)
			b := backend(t, cl)
			b.Stop = func(t *testing.T) {
				if err := cl.Stop(); err != nil {
					t.Fatalf("Stop: %v", err)
				}
			}
			b.Restart = func(t *testing.T) {
				if err := cl.Restart(); err != nil {
					t.Fatalf("Restart: %v", err)
				}
			}
			return b
		},
		LapseKeepsLeader: true,
	})
}
