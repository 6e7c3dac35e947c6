// Package redissource is an epoch source backed by a Redis lock whose value
// is the leader's epoch.
//
// For a resource R the lock key K is Options.Key with "{resource}" replaced
// by R (DefaultKey, "fencegw:{resource}", when unset). The team's leaders
// maintain it with plain commands:
//
//	INCR K:epoch                               -> E, the new epoch
//	SET K E NX PX <ttl-ms>                     take the lock; nil: another leads
//	PEXPIRE K <ttl-ms>, only while GET K == E  renew (a Lua script)
//	DEL K, only while GET K == E               release (a Lua script)
//
// fencegw only reads K, with GET and PTTL on the primary: a missing key
// (never taken, released, or expired) is no leader; a key holding a
// positive decimal epoch and an expiry is the leader with that epoch, live
// since it exists (Redis deletes it when its PX runs out). Any other value,
// and a key without an expiry (the counter K:epoch is one), fails closed.
// A lock key ending in ":epoch" could be another resource's counter: the
// resource is refused (fails closed) before any read, and a template
// ending in ":epoch" is refused by Open. The value names no holder, so
// Leader.Holder is always "".
//
// Each read sends ROLE along with GET and fails unless the server is a
// primary: a replica may lag behind a takeover. The address must name the
// primary itself; a Sentinel or Cluster deployment is read through the
// primary that holds K, and the source follows no failover or redirection.
//
// Redis replicates asynchronously, so a failover can lose the latest writes.
// A lost lock lets another leader take over while the first still acts; its
// higher epoch fences the first. A lost INCR can hand the next leader the
// epoch the first still holds, and two holders of one epoch cannot be told
// apart. A counter lost altogether (a restart without persistence) starts
// again from 1: epochs below the gateway's HWM are refused, but the one
// equal to it is reissued and admitted for both its old and new holders. This source is as strong as the deployment under it;
// docs/epoch-sources.md says how to narrow the gap (WAIT, appendfsync, a
// single primary).
package redissource
