package faults

import "testing"

func sourced(id string, epoch int64, out Outcome, call, ret int) Op {
	op := write(id, 0, "s", epoch, out, 0, call, ret)
	op.Kind = OpSourced
	return op
}

func term(holder string, epoch int64, call, acquired, lost int) Term {
	tm := Term{Resource: "s", Holder: holder, Epoch: epoch, Call: at(call), Acquired: at(acquired)}
	if lost > 0 {
		tm.Lost = at(lost)
	}
	return tm
}

// TestSourceTerms: each rule of SourceTerms finds the write (or the term)
// that breaks it, and a history a correct source and gateway produce
// passes.
func TestSourceTerms(t *testing.T) {
	terms := []Term{term("a", 5, 0, 10, 100), term("b", 9, 150, 160, 0)}
	for _, tc := range []struct {
		name  string
		ops   []Op
		terms []Term
		want  string
	}{
		{"good", []Op{
			sourced("w1", 5, OutcomeAdmitted, 20, 30),
			sourced("w2", 5, OutcomeStale, 110, 120),      // lapsed: refused
			sourced("w3", 5, OutcomeUnknown, 170, 180),    // may never have been admitted
			sourced("w4", 9, OutcomeAdmitted, 170, 180),   // the new leader
			sourced("w5", 1009, OutcomeRefused, 170, 180), // forged: 403
		}, terms, ""},
		{"lapsed", []Op{sourced("w", 5, OutcomeAdmitted, 110, 120)}, terms, "source-lapsed"},
		{"superseded", []Op{sourced("w", 5, OutcomeAdmitted, 165, 170)}, []Term{term("a", 5, 0, 10, 0), term("b", 9, 150, 160, 0)}, "source-superseded"},
		{"issued", []Op{sourced("w", 1009, OutcomeAdmitted, 170, 180)}, terms, "source-issued"},
		{"epochs", nil, []Term{term("a", 5, 0, 10, 100), term("b", 5, 150, 160, 0)}, "source-epochs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checks(SourceTerms(&History{Ops: tc.ops, Terms: tc.terms})); got != tc.want {
				t.Errorf("violations %q, want %q", got, tc.want)
			}
		})
	}
}
