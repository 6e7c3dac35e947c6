package redissource_test

import (
	"testing"

	"github.com/fencegw/fencegw/internal/testutil/testredis"
	"github.com/fencegw/fencegw/tokens/source/sourcetest"
)

// TestContract runs the epoch source contract against locks taken with the
// leader's recipe (INCR key:epoch, SET key epoch NX PX): one server for the
// subtests (each names its own resources), and a server of its own for
// the subtest that stops it.
func TestContract(t *testing.T) {
	shared := testredis.Start(t)
	sourcetest.Run(t, sourcetest.Harness{
		Shared: func(t *testing.T) *sourcetest.Backend { return backend(t, shared) },
		Own: func(t *testing.T) *sourcetest.Backend {
			own := testredis.Start(t)
			b := backend(t, own)
			b.Stop = func(*testing.T) { own.Stop() }
			b.Restart = func(*testing.T) { own.Restart() }
			return b
		},
		NoHolder: true,
	})
}
