// Package etcdstore is a tokens.Store kept in an etcd v3 cluster.
//
// Every resource has one key, Prefix+resource, whose value is its high-water
// mark (HWM) written as a decimal string ("42"). etcd compares values as
// bytes, under which "10" < "9", so the store never lets etcd compare epochs:
// it reads the value, parses it to an int64 and compares in Go, then writes
// with a transaction conditioned on the key's revision (compare-and-put). A
// value that is not a positive decimal int64 is reported as corruption
// (ErrCorruptValue), never read as 0.
//
// All reads are linearizable (they go through the raft leader and need a
// quorum), so Current reflects every Advance that returned before it, from
// any process sharing the cluster; Exclusive is always false. When the
// cluster cannot answer (no quorum, unreachable, context done) operations
// return a *tokens.UnavailableError: the outcome is unknown and callers must
// fail closed. Operations wait for the cluster as long as their context
// allows, so callers should give them a deadline.
//
// Nothing in this package deletes keys. An operator who deletes or rewrites a
// key by hand lowers or corrupts that resource's HWM; the store cannot detect
// a deletion.
package etcdstore
