package faults

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func write(id string, replica int, res string, epoch int64, out Outcome, current int64, call, ret int) Op {
	return Op{ID: id, Replica: replica, Kind: OpWrite, Resource: res, Epoch: epoch, Outcome: out, Current: current,
		Call: at(call), Return: at(ret)}
}

func receipt(id string, replica int, res string, epoch int64, start, end int) Receipt {
	return Receipt{OpID: id, Replica: replica, Resource: res, Epoch: epoch, Start: at(start), End: at(end), Whole: true}
}

// checks returns the names of the checks that found violations.
func checks(vs []Violation) string {
	var names []string
	for _, v := range vs {
		names = append(names, v.Check)
	}
	return strings.Join(names, ",")
}

// TestCheckersPassAGoodHistory: a history a correct fence produces has no
// violation.
func TestCheckersPassAGoodHistory(t *testing.T) {
	h := &History{
		Ops: []Op{
			write("a", 0, "r", 1, OutcomeAdmitted, 0, 0, 10),
			write("b", 1, "r", 2, OutcomeAdmitted, 0, 20, 30),
			write("c", 2, "r", 1, OutcomeStale, 2, 40, 50),
			write("d", 0, "r", 3, OutcomeUnknown, 0, 60, 70),
			write("e", 1, "r", 3, OutcomeUnavailable, 0, 100, 110),
			{ID: "rd", Replica: 2, Kind: OpRead, Resource: "r", Outcome: OutcomeValue, Current: 2, Call: at(80), Return: at(90)},
		},
		Receipts: []Receipt{receipt("a", 0, "r", 1, 1, 5), receipt("b", 1, "r", 2, 21, 25)},
		Windows:  []Window{{Kind: "store-cut", Replicas: []int{1}, Start: at(95), InForce: at(95), Heal: at(120), Healed: at(120), StoreCut: true}},
	}
	h.Ops = append(h.Ops, write("f", 1, "r", 3, OutcomeAdmitted, 0, 130, 140))
	h.Receipts = append(h.Receipts, receipt("f", 1, "r", 3, 131, 135))
	h.End = at(200)
	if vs := Check(h, time.Minute); len(vs) > 0 {
		t.Fatalf("violations in a good history: %v", vs)
	}
	if _, vs := Liveness(h, 3, time.Second, 0); len(vs) > 0 {
		t.Fatalf("liveness violations in a good history: %v", vs)
	}
}

// TestCheckersCatchViolations: each checker finds the breach planted for
// it.
func TestCheckersCatchViolations(t *testing.T) {
	cases := map[string]struct {
		h    History
		want string
	}{
		"a stale write admitted": {History{Ops: []Op{
			write("a", 0, "r", 2, OutcomeAdmitted, 0, 0, 10),
			write("b", 1, "r", 1, OutcomeAdmitted, 0, 20, 30),
		}, Receipts: []Receipt{receipt("a", 0, "r", 2, 1, 2), receipt("b", 1, "r", 1, 21, 22)}}, "linearizable"},
		"a read going back": {History{Ops: []Op{
			write("a", 0, "r", 2, OutcomeAdmitted, 0, 0, 10),
			{ID: "rd", Kind: OpRead, Resource: "r", Outcome: OutcomeValue, Current: 1, Call: at(20), Return: at(30)},
		}, Receipts: []Receipt{receipt("a", 0, "r", 2, 1, 2)}}, "linearizable"},
		"epochs overlapping at the upstream": {History{Leased: map[string]bool{"l": true}, Receipts: []Receipt{
			receipt("a", 0, "l", 1, 0, 50), receipt("b", 1, "l", 2, 40, 60),
		}}, "exclusive"},
		"a refused write forwarded": {History{Ops: []Op{write("z", 0, "r", 2, OutcomeAdmitted, 0, 0, 5),
			write("a", 1, "r", 1, OutcomeStale, 2, 10, 20)},
			Receipts: []Receipt{receipt("z", 0, "r", 2, 1, 2), receipt("a", 1, "r", 1, 11, 12)}}, "fail-closed"},
		"an admitted write forwarded twice": {History{Ops: []Op{write("a", 0, "r", 1, OutcomeAdmitted, 0, 0, 10)},
			Receipts: []Receipt{receipt("a", 0, "r", 1, 1, 2), receipt("a", 0, "r", 1, 3, 4)}}, "forwarded"},
		"a key forwarded twice": {History{Receipts: []Receipt{
			{OpID: "a", Resource: "r", Key: "k", Start: at(1), End: at(2)},
			{OpID: "b", Resource: "r", Key: "k", Start: at(3), End: at(4)},
		}}, "at-most-once"},
		"admitted while cut from the store": {History{Ops: []Op{write("a", 1, "r", 1, OutcomeAdmitted, 0, 20, 30)},
			Receipts: []Receipt{receipt("a", 1, "r", 1, 21, 22)},
			Windows:  []Window{{Kind: "cut", Replicas: []int{1}, Start: at(10), InForce: at(10), Heal: at(40), Healed: at(40), StoreCut: true}}}, "fail-closed"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := checks(Check(&c.h, time.Minute)); got != c.want {
				t.Fatalf("violations found by %q, want by %q", got, c.want)
			}
		})
	}
}

// TestLivenessCatchesStalls: a fault after which nothing is admitted, and
// a 503 outside every fault, are violations; recovery is measured.
func TestLivenessCatchesStalls(t *testing.T) {
	h := &History{
		Ops: []Op{
			write("a", 0, "r", 1, OutcomeUnavailable, 0, 0, 10),    // outside every window
			write("b", 0, "r", 1, OutcomeUnavailable, 0, 105, 110), // inside
			write("c", 0, "r", 2, OutcomeAdmitted, 0, 150, 160),
		},
		Windows: []Window{
			{Kind: "recovers", Replicas: []int{0}, Start: at(100), Heal: at(120), Healed: at(120)},
			{Kind: "stalls", Replicas: []int{1}, Start: at(100), Heal: at(120), Healed: at(120)},
		},
		End: at(1000),
	}
	recs, vs := Liveness(h, 2, time.Second, 0)
	if len(recs) != 2 || recs[0].After != 40*time.Millisecond || recs[1].After != -1 {
		t.Fatalf("recoveries: %+v", recs)
	}
	if len(vs) != 2 || !strings.Contains(vs[0].Detail, "stalls") || !strings.Contains(vs[1].Detail, "503") {
		t.Fatalf("violations: %v", vs)
	}
}

// TestCutWritesMayArriveTorn: a write cut at its lease's lapse (412 after
// part of it was sent) may leave a torn body at the upstream, never a whole
// one; a stale write refused before forwarding may leave nothing at all.
func TestCutWritesMayArriveTorn(t *testing.T) {
	torn := receipt("a", 0, "r", 1, 1, 2)
	torn.Whole = false
	for name, c := range map[string]struct {
		out  Outcome
		r    Receipt
		want int
	}{
		"cut, torn":    {OutcomeCut, torn, 0},
		"cut, whole":   {OutcomeCut, receipt("a", 0, "r", 1, 1, 2), 1},
		"stale, torn":  {OutcomeStale, torn, 1},
		"stale, whole": {OutcomeStale, receipt("a", 0, "r", 1, 1, 2), 1},
	} {
		h := &History{Ops: []Op{write("a", 0, "r", 1, c.out, 0, 0, 10)}, Receipts: []Receipt{c.r}}
		if vs := Forwarded(h); len(vs) != c.want {
			t.Errorf("%s: violations %v, want %d", name, vs, c.want)
		}
	}
}
