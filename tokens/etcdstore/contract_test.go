package etcdstore_test

import (
	"testing"

	"github.com/fencegw/fencegw/internal/testetcd"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/storetest"
)

// TestContract runs the store contract against one single-member cluster.
// Each subtest keeps its keys under its own prefix; each Factory call opens a
// new Store with its own client, so "restart" and "second replica" are real
// reconnections.
func TestContract(t *testing.T) {
	c := testetcd.Start(t, 1)
	storetest.Run(t, func(t *testing.T) storetest.Factory {
		prefix := "/contract/" + t.Name() + "/"
		return func(t *testing.T) tokens.Store {
			return open(t, c, prefix)
		}
	})
}

// TestLeaseContract runs the lease contract the same way: one single-member
// cluster, one prefix per subtest, a new client per Factory call.
func TestLeaseContract(t *testing.T) {
	c := testetcd.Start(t, 1)
	storetest.RunLeases(t, func(t *testing.T) storetest.Factory {
		prefix := "/leases/" + t.Name() + "/"
		return func(t *testing.T) tokens.Store {
			return open(t, c, prefix)
		}
	})
}
