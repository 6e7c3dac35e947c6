// Package source defines epoch sources: external elections that are the
// truth about who leads a resource, for teams that bring their own lease (a
// PostgreSQL lease table, an etcd election) instead of taking leases from
// fencegw.
//
// A route with raw tokens may name a Source. A presented epoch is admitted
// only if it equals the source's current epoch for the resource and that
// leader's lease has not lapsed. Check makes that decision from a Leader and
// answers with the domain's own verdicts: a *tokens.StaleEpochError (412)
// or a *tokens.EpochNotIssuedError (403). Any error from Source.Current
// wraps a *tokens.UnavailableError: the source could not confirm the
// leader, and the caller must fail closed (503).
//
// Fencing depends on Current being fresh: every backend reads the truth
// linearizably (the PostgreSQL primary, a linearizable etcd read, a ZooKeeper
// read after sync, a Lease GET that the API server serves from etcd's
// quorum), never a cache or a replica. Coalesce lets concurrent
// checks of one resource share reads without weakening that: a caller is
// only ever answered by a read that started after it called. The Coalesced it returns is the
// tokens.EpochSource a route checks epochs against.
//
// Backends live in subpackages: pgsource (the seed's leader_lease table),
// etcdsource (a go.etcd.io/etcd/client/v3/concurrency Election), redissource
// (a Redis lock whose value is the epoch), zksource (a ZooKeeper election of
// ephemeral sequential znodes, as Curator's LeaderLatch makes) and kubesource
// (a Kubernetes Lease, as client-go's leaderelection takes it, whose first
// epoch is 0). Each passes the contract suite in package sourcetest.
package source
