package faults

import (
	"math"
	"testing"

	"github.com/anishathalye/porcupine"
)

// TestModelCatchesViolations makes sure the checker is not vacuous: it
// refuses histories a broken fence would produce.
func TestModelCatchesViolations(t *testing.T) {
	w := func(e int64, out Outcome, cur int64, call, ret int64) porcupine.Operation {
		return porcupine.Operation{Input: FenceInput{Resource: "r", Epoch: e}, Output: FenceOutput{Outcome: out, Current: cur},
			Call: call, Return: ret}
	}
	r := func(v int64, call, ret int64) porcupine.Operation {
		return porcupine.Operation{Input: FenceInput{Resource: "r", Read: true}, Output: FenceOutput{Outcome: "value", Current: v},
			Call: call, Return: ret}
	}
	model := FenceModel.ToModel()
	bad := map[string][]porcupine.Operation{
		"lower epoch admitted after a higher one": {w(2, "admitted", 0, 0, 1), w(1, "admitted", 0, 2, 3)},
		"stale though nothing beat it":            {w(1, "admitted", 0, 0, 1), w(2, "stale", 3, 2, 3)},
		"stale naming an epoch never reached":     {w(2, "admitted", 0, 0, 1), w(1, "stale", 5, 2, 3)},
		"read missing a completed admission":      {w(3, "admitted", 0, 0, 1), r(0, 2, 3)},
		"read going backwards":                    {w(3, "unknown", 0, 0, math.MaxInt64), r(3, 1, 2), r(0, 3, 4)},
	}
	for name, ops := range bad {
		if porcupine.CheckOperations(model, ops) {
			t.Errorf("%s: accepted", name)
		}
	}
	good := map[string][]porcupine.Operation{
		"concurrent writes in either order": {w(2, "admitted", 0, 0, 10), w(1, "admitted", 0, 1, 9)},
		"unknown write that took effect":    {w(5, "unknown", 0, 0, math.MaxInt64), w(4, "stale", 5, 1, 2)},
		"unknown write that did not":        {w(5, "unknown", 0, 0, math.MaxInt64), w(4, "admitted", 0, 1, 2), r(4, 3, 4)},
	}
	for name, ops := range good {
		if !porcupine.CheckOperations(model, ops) {
			t.Errorf("%s: refused", name)
		}
	}
}
