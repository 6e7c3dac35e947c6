package faults

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// The fence, as porcupine sees it: one max register per resource. A write
// with epoch e is admitted iff e is not below the register, and then sets
// it to e; a stale write leaves it alone and names a value the register had
// reached (or names none: a raw epoch's refusal tells no epoch, and then
// only e below the register is checked); a read returns it. A write whose outcome is unknown may or may
// not have taken effect.

// FenceInput is an operation on the register of Resource.
type FenceInput struct {
	Resource string
	Read     bool
	Epoch    int64 // for writes
}

// FenceOutput is what an operation returned.
type FenceOutput struct {
	// Outcome is OutcomeAdmitted, OutcomeStale, OutcomeSuperseded,
	// OutcomeUnavailable or OutcomeUnknown for writes, "value" for reads.
	Outcome Outcome
	// Current is the current epoch a 412 named (0 when it named none, as
	// on raw routes), or the value read.
	Current int64
}

// FenceModel is the max-register model, partitioned by resource.
var FenceModel = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			r := op.Input.(FenceInput).Resource
			if _, ok := by[r]; !ok {
				keys = append(keys, r)
			}
			by[r] = append(by[r], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() []any { return []any{int64(0)} },
	Step: func(state, input, output any) []any {
		hwm, in, out := state.(int64), input.(FenceInput), output.(FenceOutput)
		if in.Read {
			if out.Current == hwm {
				return []any{hwm}
			}
			return nil
		}
		switch out.Outcome {
		case OutcomeAdmitted:
			if in.Epoch >= hwm {
				return []any{in.Epoch}
			}
		case OutcomeStale:
			// The named current epoch beat the write and was reached.
			if in.Epoch < hwm && (out.Current == 0 || out.Current > in.Epoch && out.Current <= hwm) {
				return []any{hwm}
			}
		case OutcomeUnknown, OutcomeUnavailable, OutcomeSuperseded, OutcomeCut:
			// Admitted (the register may have moved) or not.
			if in.Epoch >= hwm {
				return []any{hwm, in.Epoch}
			}
			return []any{hwm}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(FenceInput), output.(FenceOutput)
		if in.Read {
			return fmt.Sprintf("read(%s) = %d", in.Resource, out.Current)
		}
		return fmt.Sprintf("write(%s, %d) %s %d", in.Resource, in.Epoch, out.Outcome, out.Current)
	},
}
