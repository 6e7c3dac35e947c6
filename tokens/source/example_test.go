package source_test

import (
	"errors"
	"fmt"

	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/source"
)

// Check maps the seed's timeline to the domain's decisions: node-a leads
// with epoch 1, its lease lapses, node-b takes over with epoch 2.
func ExampleCheck() {
	describe := func(err error) string {
		var stale *tokens.StaleEpochError
		if errors.As(err, &stale) && stale.Reason != "" {
			return fmt.Sprintf("%s (%s)", tokens.DecisionOf(err), stale.Reason)
		}
		return string(tokens.DecisionOf(err))
	}
	nodeA := source.Leader{Held: true, Epoch: 1, Holder: "node-a", Live: true}
	fmt.Println("node-a leads, epoch 1:", describe(source.Check(nodeA, "invoice-sweeper", 1)))
	fmt.Println("node-a leads, epoch 2:", describe(source.Check(nodeA, "invoice-sweeper", 2)))
	nodeA.Live = false
	fmt.Println("lease lapsed, epoch 1:", describe(source.Check(nodeA, "invoice-sweeper", 1)))
	nodeB := source.Leader{Held: true, Epoch: 2, Holder: "node-b", Live: true}
	fmt.Println("node-b leads, epoch 1:", describe(source.Check(nodeB, "invoice-sweeper", 1)))
	fmt.Println("node-b leads, epoch 2:", describe(source.Check(nodeB, "invoice-sweeper", 2)))
	// Output:
	// node-a leads, epoch 1: admitted
	// node-a leads, epoch 2: forbidden
	// lease lapsed, epoch 1: stale (lease lapsed)
	// node-b leads, epoch 1: stale
	// node-b leads, epoch 2: admitted
}
