// Package faults is fencegw's fault suite, in the manner of Jepsen and of
// etcd's robustness tests: concurrent clients and leaders write through
// three gateway replicas while a nemesis restarts, kills and partitions the
// store, breaks the network between the gateways and their store and
// upstream, kills and freezes gateways, jumps their wall clocks, and slows
// the upstream; checkers then judge the recorded history.
//
// The package holds the parts the suite is made of — a loopback TCP fault
// proxy (Proxy), the history a run records (Op, Receipt, Window), and the
// checkers (linearizable admissions, exclusive epochs, at-most-once writes,
// failing closed, liveness) with their result table. The suite itself is
// its test (suite_test.go): it builds the fencegw binary and runs it as
// separate processes. See the README's "Tested against faults".
package faults
