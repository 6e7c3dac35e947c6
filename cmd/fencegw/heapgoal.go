package main

import "os"

// heapFloor is how far raiseHeapGoal lifts the collector's heap goal.
const heapFloor = 32 << 20

// raiseHeapGoal makes the garbage collector run less often while the live
// heap is small, and returns a buffer the caller must keep alive for as
// long as it serves.
//
// A gateway's live heap is a few MiB while it allocates tens of MiB a
// second. Go's default goal (twice the live heap, 4 MiB at least) then
// means a collection every 50 ms or so under load, and with one CPU each one
// slows every request in flight: measured side by side, collecting that
// often cost 10-20% of the throughput and a third to half of the p99. The
// buffer counts as live heap, so the goal becomes twice the live heap
// and heapFloor together. The collector does not scan it (it holds no pointers); it
// costs about heapFloor of resident memory, as GOGC=1000 would at a small
// live heap. Unlike raising GOGC, the floor adds rather than multiplies:
// at a million cached resources (about 60 MiB live) the goal grows by
// 2 × heapFloor, not tenfold.
//
// Nothing is raised when GOGC or GOMEMLIMIT is set: the operator's tuning
// wins.
func raiseHeapGoal() []byte {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return nil
	}
	return make([]byte, heapFloor)
}
