package source_test

import (
	"errors"
	"fmt"

	"github.com/fencegw/fencegw/tokens/source"
)

// Check maps the seed's timeline to admissions: node-a leads with epoch 1,
// its lease lapses, node-b takes over with epoch 2.
func ExampleCheck() {
	describe := func(err error) string {
		var stale *source.StaleError
		var ahead *source.AheadError
		switch {
		case err == nil:
			return "admit"
		case errors.As(err, &stale):
			return "412 " + string(stale.Reason)
		case errors.As(err, &ahead):
			return "403 never issued"
		}
		return "503"
	}
	nodeA := source.Leader{Epoch: 1, Holder: "node-a", Live: true}
	fmt.Println("node-a leads, epoch 1:", describe(source.Check(nodeA, "invoice-sweeper", 1)))
	fmt.Println("node-a leads, epoch 2:", describe(source.Check(nodeA, "invoice-sweeper", 2)))
	nodeA.Live = false
	fmt.Println("lease lapsed, epoch 1:", describe(source.Check(nodeA, "invoice-sweeper", 1)))
	nodeB := source.Leader{Epoch: 2, Holder: "node-b", Live: true}
	fmt.Println("node-b leads, epoch 1:", describe(source.Check(nodeB, "invoice-sweeper", 1)))
	fmt.Println("node-b leads, epoch 2:", describe(source.Check(nodeB, "invoice-sweeper", 2)))
	// Output:
	// node-a leads, epoch 1: admit
	// node-a leads, epoch 2: 403 never issued
	// lease lapsed, epoch 1: 412 lease lapsed
	// node-b leads, epoch 1: 412 superseded
	// node-b leads, epoch 2: admit
}
