// Package etcdsource is an epoch source backed by etcd elections: the
// go.etcd.io/etcd/client/v3/concurrency Election that a team already runs.
//
// An Election with prefix P keeps one key per campaigner under P+"/", each
// attached to its campaigner's session lease; the leader is the key with the
// lowest create revision, and Election.Rev() is that revision. This package
// reads the election the same way Election.Leader does, with a linearizable
// Get, and reports:
//
//   - Epoch: the leader key's create revision (what the leader got from
//     Election.Rev() and presents as its fencing token);
//   - Holder: the leader key's value (the campaign value, or the latest
//     Proclaim);
//   - Live: true whenever a leader key exists, since etcd deletes the key
//     when the session's lease expires or the leader resigns.
//
// Revisions rise across the whole cluster, so a new leader always has a
// higher epoch than every earlier one of the same election.
package etcdsource
