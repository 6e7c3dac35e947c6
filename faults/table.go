package faults

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

// Table is a run's result: one row per fault — the operations from its
// start to its recovery, how they ended, the violations found among them,
// and how long admissions took to resume after the heal — and a total row.
func Table(h *History, recs []Recovery, vs []Violation) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "fault\tops\tadmitted\trefused 412\tunavailable 503\tunknown\tviolations\trecovery\t")
	for _, rec := range recs {
		end := rec.Window.Healed.Add(max(rec.After, 0))
		if rec.After < 0 {
			end = h.End
		}
		r := count(h, vs, rec.Window.Start, end)
		recovery := "never"
		if rec.After >= 0 {
			recovery = rec.After.Round(10 * time.Millisecond).String()
		}
		name := rec.Window.Kind
		if len(rec.Window.With) > 0 {
			name += " (with " + strings.Join(rec.Window.With, ", ") + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", name, r.ops, r.admitted, r.refused, r.unavailable,
			r.unknown, r.violations, recovery)
	}
	total := count(h, vs, time.Time{}, h.End)
	fmt.Fprintf(tw, "whole run\t%d\t%d\t%d\t%d\t%d\t%d\t\t\n", total.ops, total.admitted, total.refused, total.unavailable,
		total.unknown, total.violations)
	tw.Flush()
	return b.String()
}

type row struct{ ops, admitted, refused, unavailable, unknown, violations int }

// count tallies the writes called and the violations found in [from, to].
func count(h *History, vs []Violation, from, to time.Time) row {
	var r row
	in := func(t time.Time) bool { return !t.Before(from) && !t.After(to) }
	for _, op := range h.Ops {
		if !op.Kind.isWrite() || !in(op.Call) {
			continue
		}
		r.ops++
		switch op.Outcome {
		case OutcomeAdmitted, OutcomeReplayed, OutcomeHeld:
			r.admitted++
		case OutcomeStale, OutcomeSuperseded, OutcomeCut:
			r.refused++
		case OutcomeUnavailable:
			r.unavailable++
		case OutcomeUnknown:
			r.unknown++
		}
	}
	for _, v := range vs {
		if in(v.At) {
			r.violations++
		}
	}
	return r
}
