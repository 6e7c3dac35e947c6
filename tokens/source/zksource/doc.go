// Package zksource is an epoch source backed by ZooKeeper elections: the
// recipe Curator's LeaderLatch and InterProcessMutex (and most other
// ZooKeeper leader elections and locks) follow.
//
// Each participant creates an ephemeral sequential child under the
// election's parent znode, such as _c_<uuid>-latch-0000000003 (LeaderLatch)
// or _c_<uuid>-lock-0000000007 (InterProcessMutex); the participant whose
// child has the lowest sequence number leads. This package reads the
// election the same way and reports:
//
//   - Epoch: the leader child's czxid, the transaction id that created it
//     (what the leader reads from its own node's Stat and presents as its
//     fencing token);
//   - Holder: the leader child's data, or its name when the data is empty;
//   - Live: true whenever a leader child exists, since ZooKeeper deletes
//     an ephemeral node when its session expires or is closed.
//
// Zxids rise across the whole ensemble, and a new leader's child is always
// created after the previous leader's, so a new leader always has a higher
// epoch than every earlier one of the same election. A czxid is never 0.
//
// The sequence number is the child name's last 10 characters, all decimal
// digits, from 0 to 2^31-1 (ZooKeeper's int32 counter as %010d); children
// whose names do not end so take no part in the election and are ignored.
// That includes 10 digits above 2^31-1, which the counter never gives, and
// '-' with 9 digits, which it gives only after it overflowed (2^31
// children created under one parent): a junk child of either form, which
// anyone allowed to create children can add, must not make every write to
// the election fail. After a real overflow the newer participants are thus
// ignored and their epochs refused: fencing stays safe (at most the lowest
// valid child's epoch is admitted), the election unavailable to them.
//
// ZooKeeper serves a read from the server a client is connected to, which
// may lag behind the ensemble's leader. Every read therefore first sends
// sync on the election's path, which makes that server catch up with the
// leader, and only then lists the children and reads the lowest one, all on
// one session (whose requests the server handles in order). A client
// without a live session (disconnected, or its session expired) fails
// closed until it has one again.
package zksource
