package faults

import (
	"fmt"
	"sort"
)

// SourceTerms checks the writes on routes fenced by an epoch source
// (OpSourced) against the terms the leaders took in that source (h.Terms):
//
//   - epochs: a term whose campaign began after another term of the same
//     resource was acquired has a higher epoch — the source never handed
//     out an epoch twice or went back (a Redis epoch counter lost in a
//     restart without persistence would: then two leaders can present one
//     epoch, and no gateway can tell them apart);
//   - issued: an admitted write's epoch is the epoch of a term of its
//     resource whose campaign began before the write returned;
//   - superseded: no write at epoch E was admitted that was called after a
//     term of its resource with a higher epoch had been acquired;
//   - lapsed: no write at E was admitted that was called after E's term
//     was surely lost (Term.Lost: released, expired, its node gone).
//
// Writes of unknown outcome are not checked: they may have been admitted
// at any time after their call, which none of these rules forbids.
func SourceTerms(h *History) []Violation {
	by := map[string][]Term{}
	for _, tm := range h.Terms {
		by[tm.Resource] = append(by[tm.Resource], tm)
	}
	vs := termEpochs(by)
	for _, op := range h.Ops {
		if op.Kind != OpSourced || op.Outcome != OutcomeAdmitted {
			continue
		}
		if v, bad := admittedAgainst(op, by[op.Resource]); bad {
			vs = append(vs, v)
		}
	}
	return vs
}

// termEpochs checks that, per resource, a term whose campaign began after
// another's acquisition has a higher epoch.
func termEpochs(by map[string][]Term) []Violation {
	var vs []Violation
	for res, terms := range by {
		sort.Slice(terms, func(i, j int) bool { return terms[i].Acquired.Before(terms[j].Acquired) })
		for i, a := range terms {
			for _, b := range terms[i+1:] {
				if b.Call.After(a.Acquired) && b.Epoch <= a.Epoch {
					vs = append(vs, Violation{Check: "source-epochs", At: b.Acquired, Detail: fmt.Sprintf(
						"%s: %s took epoch %d after %s had taken epoch %d: the source's epochs went back",
						res, b.Holder, b.Epoch, a.Holder, a.Epoch)})
				}
			}
		}
	}
	return vs
}

// admittedAgainst checks one admitted write against its resource's terms:
// issued, not superseded, not lapsed.
func admittedAgainst(op Op, terms []Term) (Violation, bool) {
	issued := false
	for _, tm := range terms {
		switch {
		case tm.Epoch == op.Epoch && !tm.Call.After(op.Return):
			issued = true
			if !tm.Lost.IsZero() && op.Call.After(tm.Lost) {
				return Violation{Check: "source-lapsed", At: op.Call, Detail: fmt.Sprintf(
					"%s: write %s at epoch %d admitted through replica %d, called %s after %s's term at that epoch was lost",
					op.Resource, op.ID, op.Epoch, op.Replica, op.Call.Sub(tm.Lost), tm.Holder)}, true
			}
		case tm.Epoch > op.Epoch && op.Call.After(tm.Acquired):
			return Violation{Check: "source-superseded", At: op.Call, Detail: fmt.Sprintf(
				"%s: write %s at epoch %d admitted through replica %d, called %s after %s took epoch %d",
				op.Resource, op.ID, op.Epoch, op.Replica, op.Call.Sub(tm.Acquired), tm.Holder, tm.Epoch)}, true
		}
	}
	if !issued {
		return Violation{Check: "source-issued", At: op.Call, Detail: fmt.Sprintf(
			"%s: write %s at epoch %d admitted through replica %d, an epoch no leader took",
			op.Resource, op.ID, op.Epoch, op.Replica)}, true
	}
	return Violation{}, false
}
