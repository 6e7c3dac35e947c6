package etcdstore_test

import (
	"testing"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/storetest"
)

// TestContract runs the store contract against one single-member cluster.
func TestContract(t *testing.T) {
	storetest.Run(t, freshUnder(testetcd.Start(t, 1), "/contract/"))
}

// TestLeaseContract runs the lease contract the same way.
func TestLeaseContract(t *testing.T) {
	storetest.RunLeases(t, freshUnder(testetcd.Start(t, 1), "/leases/"))
}

// TestLeaseRecordsContract runs the live-count and reclaim contract.
func TestLeaseRecordsContract(t *testing.T) {
	storetest.RunLeaseRecords(t, freshUnder(testetcd.Start(t, 1), "/records/"))
}

// freshUnder returns a contract suite's fresh function over cluster c: each
// subtest keeps its keys under a prefix of its own below base, and each
// Factory call opens a new Store with its own client, so "restart" and
// "second replica" are real reconnections.
func freshUnder(c *testetcd.Cluster, base string) func(t *testing.T) storetest.Factory {
	return func(t *testing.T) storetest.Factory {
		prefix := base + t.Name() + "/"
		return func(t *testing.T) tokens.Store {
			return open(t, c, prefix)
		}
	}
}

func TestIdempotencyContract(t *testing.T) {
	storetest.RunIdempotency(t, freshUnder(testetcd.Start(t, 1), "/idem/"))
}

func TestAuditContract(t *testing.T) {
	storetest.RunAudit(t, freshUnder(testetcd.Start(t, 1), "/audit/"))
}
