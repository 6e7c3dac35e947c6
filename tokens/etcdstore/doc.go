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
// # Leases
//
// The Store is also a tokens.LeaseStore. Every deadline lives in etcd: a
// lease is live exactly while an etcd lease with its TTL is, and no process's
// clock decides who holds it. A lease named N uses four keys, all under the
// store's prefix P:
//
//	P + N                  HWM of resource N (decimal), as above
//	P + "\x00issued/" + N  highest epoch ever granted for N (decimal)
//	P + "\x00lease/" + N   JSON record of the latest grant: holder, epoch,
//	                       ttl_ms, etcd_lease (ID), etcd_ttl_s, granted_at,
//	                       owner (the acquiring caller's name; absent when
//	                       unowned)
//	P + "\x00alive/" + N   JSON {holder, epoch}, attached to the grant's etcd
//	                       lease: it exists exactly while that lease is live
//
// The NUL byte cannot start (or appear in) a resource name, so lease keys
// never collide with HWM keys, whatever the names. The HWM key is where it
// always was, so HWMs written before leases existed keep working. Only the
// HWM, issued and record keys are durable; the alive key is deleted by etcd
// when the lease lapses (its TTL passes without renewal) or is released
// (revoked).
//
// An acquire writes the record, the alive key, the HWM and the issued epoch
// in one transaction conditioned on none of them having changed since they
// were read: a grant fences the resource in the same atomic step. Advance
// reads the issued key with the HWM and refuses epochs above it once a lease
// was granted, conditioning its write on both keys. The grant's owner is in
// its record, so an acquire decides ownership from the state its transaction
// requires unchanged; renew and release check the owner of the record they
// read, whose etcd lease is the only one they touch.
//
// etcd lease TTLs are whole seconds of at least the cluster's minimum (1.5
// election timeouts, rounded up to a second; 2s with etcd's default 1s
// election timeout): the Store refuses any other TTL (it is a
// tokens.TTLLimiter), so that a grant's etcd lease lapses at the ExpiresAt
// reported, not later. A lock-delay is rounded up to whole seconds. etcd
// deletes an expired lease's keys up to about half a second late; a release
// that finds less than a second left counts as a lapse. When a new leader takes over,
// etcd extends every live lease to its full TTL (its checkpointed remaining
// TTL if lease checkpointing is enabled) plus an election timeout. Both only
// ever make a lease last longer than its TTL, never shorter: a holder that
// treats ExpiresAt as its deadline stops in time (given clocks that run at
// about the same rate), and a takeover after a leader change can take up to
// about twice the TTL.
//
// All reads are linearizable (they go through the raft leader and need a
// quorum), so Current reflects every Advance that returned before it, from
// any process sharing the cluster; Exclusive is always false. When the
// cluster cannot answer (no quorum, unreachable, context done) operations
// return a *tokens.UnavailableError: the outcome is unknown and callers must
// fail closed. Operations wait for the cluster as long as their context
// allows, so callers should give them a deadline.
//
// # Audit
//
// The durable audit (tokens.AuditStore) keeps each entry as JSON under
// P + "\x00audit/" + stream + "/" + ID. IDs start with their interval's
// time, so key order is time order, oldest first: a purge reads the
// oldest entries in one ascending range read. The audit lists entries
// newest first, and etcd applies a range read's limit only to ascending
// key order (sorted otherwise, the server reads the whole range), so the
// lists read an index whose keys end in the ID inverted (each digit of
// the time d as 9-d, of the digest h as 15-h): ascending key order is
// newest first. The index (auditindex.go) lives under
// P + "\x00auditidx2/" + stream + "/", one empty key per entry and
// resource, per entry and kind (tokens.AuditIndexPrefix) and per entry
// ("t/"), put and deleted in the transaction that puts or deletes the
// entry. etcd counts every key of a range it reads, whatever the limit,
// so a list also bounds each read by a window of interval starts, from
// the newest start of the stream's entries, which
// P + "\x00auditidx2-newest/" + stream holds (raised in the transactions
// that put them). P + "\x00auditidx-span/" + stream holds the longest
// span of the stream's entries (bounding a query by time), and
// P + "\x00auditidx2-version" says every entry is indexed (written by the
// first write to a new store, or by the one-time backfill of entries of an
// older version, which keeps its place in P + "\x00auditidx2-backfill/").
// The backfill, started by the first audit read or write, also deletes the
// first layout of the index (P + "\x00auditidx/", IDs in ascending order,
// complete once P + "\x00auditidx-version" was written) before it
// writes the version key. Replicas of an older version write no keys of
// this index: upgrade them all.
//
// Nothing in this package deletes HWM or issued keys. Revoking or letting
// an etcd lease lapse deletes its alive key; audit purges delete audit
// entries and their index keys; ReclaimLeases deletes the record of a lease
// that ended longer than the retention ago (its HWM and issued epoch stay,
// so its next grant is still higher). An operator who deletes or rewrites a
// key by hand lowers or corrupts that resource's HWM or lease; the store
// cannot detect a deletion.
package etcdstore
