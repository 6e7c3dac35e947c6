package faults

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// sourceLeaders is how many leaders compete in each source, over its
// resources.
const sourceLeaders = 3

// TestEpochSources runs, for each kind of epoch source (sourceKinds), three
// gateways on PostgreSQL whose route /src/{resource}/ is fenced by that
// source, each reaching it through proxies of its own, while leaders take
// terms in the source itself, write through random replicas, resign or
// lapse and write on as zombies; the nemesis makes each of the kind's
// faults (sourceFaults), one at a time. The history is checked as the
// suite's (Check, Liveness, the HWMs) — with SourceTerms, the writes
// against the terms the leaders took — and the run fails unless the faults
// and the fencing were met: 503s through every replica a fault cut,
// zombies refused with 412, forged epochs refused, terms that lapsed on a
// known moment, admissions before the first fault and after the last.
func TestEpochSources(t *testing.T) { runSourceKinds(t, sourceKinds()) }

// TestEpochSourcesKube is TestEpochSources for the kinds whose server is
// kube-apiserver (kubeSourceKinds), a test of its own so that
// scripts/test.sh runs it once the binary's build has ended.
func TestEpochSourcesKube(t *testing.T) { runSourceKinds(t, kubeSourceKinds()) }

// runSourceKinds runs the plan for each of kinds and each seed of the
// suite's settings, as subtests kind/seed=N.
func runSourceKinds(t *testing.T, kinds []sourceKind) {
	seeds, hold, _ := suiteSettings(t)
	for _, kind := range kinds {
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("%s/seed=%d", kind.name, seed), func(t *testing.T) {
				t.Logf("replay with %s=%d %s=%s", envSeeds, seed, envHold, hold)
				runSourceSuite(t, kind, seed, hold)
			})
		}
	}
}

// runSourceSuite runs the plan for one kind of source and checks it.
// Its faults are made one at a time: paired with a gateway's SIGKILL, a
// fault that cuts every replica from the source could not be met through
// the killed one.
func runSourceSuite(t *testing.T, kind sourceKind, seed uint64, hold time.Duration) {
	env := kind.start(t)
	c := newSourceCluster(t, "postgres", env.route)
	w := newWorkload(c)
	var holders []string
	var electors []elector
	for i := range sourceLeaders {
		holders = append(holders, fmt.Sprintf("holder-%d", i))
		electors = append(electors, env.elector(t, holders[i]))
	}
	stop := make(chan struct{})
	wait := w.runSourced(seed, holders, electors, env.ttl, stop)
	halted := false
	defer func() {
		if !halted {
			close(stop)
			wait()
		}
	}()
	time.Sleep(env.ttl) // warm up: the first terms
	label := kind.name + "-source"
	windows, hwm := c.runPlan(w, label, seed, planOf(sourceFaults(env), seed, 0), hold)
	time.Sleep(env.ttl) // terms after the last fault
	close(stop)
	wait()
	halted = true
	time.Sleep(200 * time.Millisecond) // receipts of the last answers
	h := &History{Ops: w.history(), Receipts: c.up.receipts(), Windows: windows, Terms: w.termsSoFar(), End: time.Now()}
	vs := judge(t, fmt.Sprintf("epoch source %s, seed %d, faults held %s", kind.name, seed, hold), h, len(c.gateways), hwm)
	missing, met := sourceExercised(h, len(c.gateways), env.zeroEpoch)
	t.Logf("%d terms; met: %v", len(h.Terms), met)
	for _, e := range missing {
		t.Errorf("%s: the plan was not exercised", e)
	}
	for _, v := range vs {
		t.Errorf("%s", v)
	}
}

// sourceExercised lists what the run should have met and did not: 503s
// through every replica while a fault cut it from the source, admissions
// before the first fault and after the last heal, zombie writes refused
// with 412, forged epochs refused and none admitted, and terms that lapsed
// at a known moment (else SourceTerms checks no lapse) — and, when
// zeroEpoch (the source's first epoch is 0), writes admitted at epoch 0.
// met counts what was met.
func sourceExercised(h *History, replicas int, zeroEpoch bool) (missing []string, met map[string]int) {
	if len(h.Windows) == 0 {
		return []string{"no fault was made"}, nil
	}
	first, last := h.Windows[0].Start, h.Windows[len(h.Windows)-1].Healed
	n := map[string]int{}
	for _, op := range h.Ops {
		if op.Kind != OpSourced {
			continue
		}
		switch {
		case op.Outcome == OutcomeAdmitted && op.Return.Before(first):
			n["admitted before the first fault"]++
		case op.Outcome == OutcomeAdmitted && op.Call.After(last):
			n["admitted after the last heal"]++
		}
		if op.Outcome == OutcomeAdmitted && op.Epoch == 0 {
			n["admitted at epoch 0"]++
		}
		switch {
		case strings.HasSuffix(op.Holder, zombieSuffix) && (op.Outcome == OutcomeStale):
			n["zombie writes refused with 412"]++
		case strings.HasSuffix(op.Holder, forgedSuffix) && op.Outcome == OutcomeRefused:
			n["forged epochs refused with 403"]++
		}
	}
	for _, tm := range h.Terms {
		if tm.Lapsed && !tm.Lost.IsZero() {
			n["terms that lapsed at a known moment"]++
		}
	}
	want := []string{"admitted before the first fault", "admitted after the last heal",
		"zombie writes refused with 412", "forged epochs refused with 403", "terms that lapsed at a known moment"}
	if zeroEpoch {
		want = append(want, "admitted at epoch 0")
	}
	for _, what := range want {
		if n[what] == 0 {
			missing = append(missing, "no "+what)
		}
	}
	for _, win := range h.Windows {
		if win.StoreCut {
			missing = append(missing, unmetCut(h, win, replicas)...)
		}
	}
	return missing, n
}

// unmetCut lists the replicas (of replicas) win cut from the source
// through which no sourced write was answered 503 while it was in force.
func unmetCut(h *History, win Window, replicas int) []string {
	var missing []string
	for r := range replicas {
		if !win.affects(r) {
			continue
		}
		met := false
		for _, op := range h.Ops {
			met = met || (op.Kind == OpSourced && op.Replica == r && op.Outcome == OutcomeUnavailable &&
				op.Call.After(win.InForce) && op.Call.Before(win.Heal))
		}
		if !met {
			missing = append(missing, fmt.Sprintf("%s: no 503 through replica %d", win.Kind, r))
		}
	}
	return missing
}
