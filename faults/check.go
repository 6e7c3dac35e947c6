package faults

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// Violation is one breach of a guarantee found in a history.
type Violation struct {
	// Check names the checker that found it.
	Check string
	// At is when it happened (an operation's call, a receipt's start).
	At     time.Time
	Detail string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s at %s: %s", v.Check, v.At.Format("15:04:05.000"), v.Detail)
}

// Check runs every checker over h. linearizeFor bounds porcupine.
func Check(h *History, linearizeFor time.Duration) []Violation {
	var vs []Violation
	vs = append(vs, Linearizable(h, linearizeFor)...)
	vs = append(vs, Exclusive(h)...)
	vs = append(vs, Forwarded(h)...)
	vs = append(vs, AtMostOnce(h)...)
	vs = append(vs, FailClosed(h)...)
	vs = append(vs, SourceTerms(h)...)
	sort.Slice(vs, func(i, j int) bool { return vs[i].At.Before(vs[j].At) })
	return vs
}

// Linearizable checks the raw writes and the reads of the fence, per
// resource, against the max-register model (FenceModel), for the resources
// that are neither leases (a lease's HWM also rises on grants, which the
// history does not hold) nor fenced by an epoch source (whose writes are
// decided by the source: SourceTerms checks them). Operations of unknown
// outcome may take effect at any time after their call.
func Linearizable(h *History, timeout time.Duration) []Violation {
	if len(h.Ops) == 0 {
		return nil
	}
	sourced := map[string]bool{}
	for _, op := range h.Ops {
		if op.Kind == OpSourced {
			sourced[op.Resource] = true
		}
	}
	t0 := h.Ops[0].Call
	for _, op := range h.Ops {
		if op.Call.Before(t0) {
			t0 = op.Call
		}
	}
	var ops []porcupine.Operation
	for _, op := range h.Ops {
		in := FenceInput{Resource: op.Resource, Epoch: op.Epoch}
		out := FenceOutput{Outcome: op.Outcome, Current: op.Current}
		ret := int64(op.Return.Sub(t0))
		switch {
		case h.Leased[op.Resource] || sourced[op.Resource]:
			continue // its epochs come from grants or a source, which the model does not see
		case op.Kind == OpRead && op.Outcome == OutcomeValue:
			in.Read = true
		case op.Kind != OpWrite:
			continue
		case op.Outcome == OutcomeReplayed || op.Outcome == OutcomeHeld:
			out.Outcome = OutcomeAdmitted // the fence admitted it
		case op.Outcome == OutcomeUnknown || op.Outcome == OutcomeUnavailable:
			ret = math.MaxInt64
		case op.Outcome == OutcomeRefused:
			continue
		}
		ops = append(ops, porcupine.Operation{ClientId: op.Client, Input: in, Output: out,
			Call: int64(op.Call.Sub(t0)), Return: ret})
	}
	res, _ := porcupine.CheckOperationsVerbose(FenceModel.ToModel(), ops, timeout)
	switch res {
	case porcupine.Illegal:
		return []Violation{{Check: "linearizable", At: t0, Detail: fmt.Sprintf("the %d raw writes and reads are not linearizable", len(ops))}}
	case porcupine.Unknown:
		return []Violation{{Check: "linearizable", At: t0, Detail: fmt.Sprintf("porcupine could not decide within %s", timeout)}}
	}
	return nil
}

// Exclusive checks exclusive epochs: no write received whole at an epoch
// ended after a write at a higher epoch started — across replicas for
// leased resources, per replica for the others (whose drain is per
// replica).
func Exclusive(h *History) []Violation {
	type group struct {
		resource string
		replica  int
	}
	by := map[group][]Receipt{}
	for _, r := range h.Receipts {
		g := group{r.Resource, r.Replica}
		if h.Leased[r.Resource] {
			g.replica = -1
		}
		by[g] = append(by[g], r)
	}
	var vs []Violation
	for g, rs := range by {
		for _, b := range rs {
			for _, a := range rs {
				if a.Epoch < b.Epoch && a.Whole && !a.End.Before(b.Start) {
					vs = append(vs, Violation{Check: "exclusive", At: b.Start, Detail: fmt.Sprintf(
						"%s (replica %d): write %s at epoch %d ended %s after write %s at epoch %d started",
						g.resource, g.replica, a.OpID, a.Epoch, a.End.Sub(b.Start), b.OpID, b.Epoch)})
				}
			}
		}
	}
	return vs
}

// Forwarded checks what reached the upstream against what clients were
// told: an admitted write exactly once with its epoch; a write refused,
// replayed, held or failed for want of the store never.
func Forwarded(h *History) []Violation {
	got := map[string][]Receipt{}
	for _, r := range h.Receipts {
		got[r.OpID] = append(got[r.OpID], r)
	}
	var vs []Violation
	for _, op := range h.Ops {
		if !op.Kind.isWrite() {
			continue
		}
		rs := got[op.ID]
		must, sure := op.Outcome.forwarded()
		switch {
		case !sure && len(rs) > 1:
			vs = append(vs, Violation{Check: "forwarded", At: op.Call, Detail: fmt.Sprintf("write %s of unknown outcome reached the upstream %d times", op.ID, len(rs))})
		case sure && must && (len(rs) != 1 || rs[0].Epoch != op.Epoch):
			vs = append(vs, Violation{Check: "forwarded", At: op.Call, Detail: fmt.Sprintf("admitted write %s at epoch %d reached the upstream %d times %v", op.ID, op.Epoch, len(rs), epochs(rs))})
		case op.Outcome == OutcomeCut:
			if n := wholeOf(rs); n > 0 {
				vs = append(vs, Violation{Check: "fail-closed", At: op.Call, Detail: fmt.Sprintf("cut write %s (replica %d) reached the upstream whole %d times", op.ID, op.Replica, n)})
			}
		case sure && !must && len(rs) > 0:
			vs = append(vs, Violation{Check: "fail-closed", At: op.Call, Detail: fmt.Sprintf("%s write %s (replica %d) reached the upstream (%d of %d receipts whole)", op.Outcome, op.ID, op.Replica, wholeOf(rs), len(rs))})
		}
	}
	return vs
}

func epochs(rs []Receipt) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.Epoch
	}
	return out
}

// AtMostOnce checks that no (resource, Idempotency-Key) reached the
// upstream twice.
func AtMostOnce(h *History) []Violation {
	type rk struct{ resource, key string }
	seen := map[rk]Receipt{}
	var vs []Violation
	for _, r := range h.Receipts {
		if r.Key == "" {
			continue
		}
		k := rk{r.Resource, r.Key}
		if first, ok := seen[k]; ok {
			vs = append(vs, Violation{Check: "at-most-once", At: r.Start, Detail: fmt.Sprintf(
				"%s key %s forwarded twice: writes %s and %s", r.Resource, r.Key, first.OpID, r.OpID)})
			continue
		}
		seen[k] = r
	}
	return vs
}

// FailClosed checks that nothing was admitted through a replica while it
// could not reach its store: an operation called after a store cut was in
// force and answered before its heal began.
func FailClosed(h *History) []Violation {
	var vs []Violation
	for _, w := range h.Windows {
		if !w.StoreCut {
			continue
		}
		for _, op := range h.Ops {
			if !op.Kind.isWrite() || !w.affects(op.Replica) {
				continue
			}
			if op.Outcome == OutcomeAdmitted && op.Call.After(w.InForce) && op.Return.Before(w.Heal) {
				vs = append(vs, Violation{Check: "fail-closed", At: op.Call, Detail: fmt.Sprintf(
					"write %s at epoch %d admitted through replica %d during %s, which cut it from the store "+
						"(called %s after the cut, answered %s before the heal)",
					op.ID, op.Epoch, op.Replica, w.Kind, op.Call.Sub(w.InForce), w.Heal.Sub(op.Return))})
			}
		}
	}
	return vs
}

// Recovery is how a fault ended for the workload.
type Recovery struct {
	Window Window
	// After is the time from the end of the heal to the first admitted write through
	// every replica the fault was aimed at (the longest of them); -1 when
	// one never admitted again before the run ended.
	After time.Duration
}

// Liveness measures each window's recovery, and reports the faults that
// took longer than bound to recover and the 503s outside every window.
// A window spans, for each replica it was aimed at, from its start to
// settle after the replica's recovery: connections a fault killed keep
// failing until the replica finds them dead (a keepalive, a timeout), and
// settle bounds that.
func Liveness(h *History, replicas int, bound, settle time.Duration) ([]Recovery, []Violation) {
	var recs []Recovery
	var vs []Violation
	// until[r] lists, per replica, the spans in which 503s are expected.
	type span struct{ from, to time.Time }
	until := make([][]span, replicas)
	for _, w := range h.Windows {
		rec := Recovery{Window: w}
		for r := 0; r < replicas; r++ {
			if !w.affects(r) {
				continue
			}
			first := time.Time{}
			for _, op := range h.Ops {
				if op.Replica == r && op.Outcome == OutcomeAdmitted && !op.Call.Before(w.Healed) &&
					(first.IsZero() || op.Return.Before(first)) {
					first = op.Return
				}
			}
			if first.IsZero() {
				rec.After = -1
				until[r] = append(until[r], span{w.Start, h.End})
				continue
			}
			if rec.After >= 0 {
				rec.After = max(rec.After, first.Sub(w.Healed))
			}
			until[r] = append(until[r], span{w.Start, first.Add(settle)})
		}
		if rec.After < 0 || rec.After > bound {
			vs = append(vs, Violation{Check: "liveness", At: w.Healed, Detail: fmt.Sprintf(
				"%s: admissions had not resumed through every replica %s after the heal", w.Kind, bound)})
		}
		recs = append(recs, rec)
	}
	for _, op := range h.Ops {
		if op.Outcome != OutcomeUnavailable || op.Replica < 0 || op.Replica >= replicas {
			continue
		}
		expected := false
		for _, s := range until[op.Replica] {
			if op.Return.After(s.from) && op.Call.Before(s.to) {
				expected = true
				break
			}
		}
		if !expected {
			vs = append(vs, Violation{Check: "liveness", At: op.Call, Detail: fmt.Sprintf(
				"503 for %s %s through replica %d outside every fault", op.Kind, op.ID, op.Replica)})
		}
	}
	return recs, vs
}

// wholeOf counts the receipts of rs whose body arrived whole.
func wholeOf(rs []Receipt) int {
	n := 0
	for _, r := range rs {
		if r.Whole {
			n++
		}
	}
	return n
}
