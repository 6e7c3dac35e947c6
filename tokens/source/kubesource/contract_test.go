package kubesource_test

import (
	"testing"

	"github.com/fencegw/fencegw/internal/testutil/testkube"
	"github.com/fencegw/fencegw/tokens/source/sourcetest"
)

// TestContract runs the epoch source contract against Leases taken as
// client-go's leaderelection takes them, on a real kube-apiserver: one
// server for the subtests (each names its own Leases), and a server of its
// own for the subtest that stops it. A lapsed Lease keeps its holder, and
// a new Lease's first leader has epoch 0.
func TestContract(t *testing.T) {
	shared := testkube.Start(t)
	sourcetest.Run(t, sourcetest.Harness{
		Shared: func(t *testing.T) *sourcetest.Backend { return backend(t, shared) },
		Own: func(t *testing.T) *sourcetest.Backend {
			own := testkube.Start(t)
			b := backend(t, own)
			b.Stop = func(*testing.T) { own.Stop() }
			b.Restart = func(*testing.T) { own.Restart() }
			return b
		},
		LapseKeepsLeader: true,
		FirstEpochZero:   true,
	})
}
