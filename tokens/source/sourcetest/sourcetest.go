// Package sourcetest is the contract suite every epoch source backend (a
// source.Source) must pass, run against real servers, and the helpers the
// backends' own tests share.
//
// A backend's test calls Run with a Harness: how to open the backend's
// Source, and an Election that drives the backend's elections from outside,
// as a team's own lease clients would. The suite checks the leader read,
// every verdict source.Check gives on it, failing closed when the server is
// down or the Source closed, context cancellation, and the same through
// source.Coalesce.
package sourcetest

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens/source"
)

// Election drives one backend's elections from outside.
type Election interface {
	// Acquire makes holder the leader of resource, whose lease must be free
	// or lapsed, and returns the new leader's epoch: above every epoch
	// resource had before, and not negative (0 only for the first leader
	// of a source whose Harness sets FirstEpochZero).
	Acquire(t *testing.T, resource, holder string) int64
	// Lapse ends the lease of resource's leader on the source's own clock,
	// as if the leader had stopped renewing it, and nobody takes over.
	Lapse(t *testing.T, resource string)
}

// Backend is one backend under test.
type Backend struct {
	// Open opens a new Source over the elections Election drives. The
	// suite closes it.
	Open func(ctx context.Context) (source.Source, error)
	// Election drives the elections.
	Election Election
	// Stop takes the backend's server down and Restart brings it back
	// with its data. Only Harness.Own sets them.
	Stop, Restart func(t *testing.T)
}

// Harness gives the suite its backends.
type Harness struct {
	// Shared returns a backend for one subtest. Backends of different
	// subtests may share a server: each subtest names its own resources.
	Shared func(t *testing.T) *Backend
	// Own returns a backend on a server of its own, with Stop and Restart.
	Own func(t *testing.T) *Backend
	// LapseKeepsLeader reports that a lapsed lease stays the source's
	// leader record, no longer live (a lease table); otherwise a lapse
	// leaves no leader (an etcd election deletes the key with its lease).
	LapseKeepsLeader bool
	// NoHolder reports that the source never names the leader: its
	// records hold the epoch alone, and Holder is always "" (a Redis lock
	// whose value is the epoch).
	NoHolder bool
	// FirstEpochZero reports that the first leader of a resource gets
	// epoch 0, a real epoch the source vouches for (a Kubernetes Lease's
	// leaseTransitions); otherwise every epoch is positive.
	FirstEpochZero bool
}

// leader is the Leader h's source reports for a leader elected as holder
// with epoch: without the holder when h.NoHolder.
func (h Harness) leader(epoch int64, holder string, live bool) source.Leader {
	if h.NoHolder {
		holder = ""
	}
	return source.Leader{Held: true, Epoch: epoch, Holder: holder, Live: live}
}

// contract lists the suite's subtests, in the order Run runs them.
var contract = []struct {
	name string
	run  func(*testing.T, Harness)
}{
	{"NoLeader", testNoLeader},
	{"Leader", testLeader},
	{"FirstEpoch", testFirstEpoch},
	{"Takeover", testTakeover},
	{"Lapsed", testLapsed},
	{"IndependentResources", testIndependentResources},
	{"ConcurrentReads", testConcurrentReads},
	{"Closed", testClosed},
	{"CancelledContext", testCancelledContext},
	{"ServerDown", testServerDown},
	{"CoalescedFresh", testCoalescedFresh},
	{"CoalescedCallerGivesUp", testCoalescedCallerGivesUp},
}

// Run runs the contract suite, each subtest on a backend of its own from h.
func Run(t *testing.T, h Harness) {
	if h.Shared == nil || h.Own == nil {
		t.Fatal("sourcetest: the Harness needs Shared and Own")
	}
	for _, c := range contract {
		t.Run(c.name, func(t *testing.T) { c.run(t, h) })
	}
}

// resource names a resource of t's own, as a DNS-1123 subdomain (every
// backend takes those, a Kubernetes Lease only those): t's name in lower
// case, each subtest a dot-separated label, other characters '-'.
func resource(t *testing.T, name string) string {
	labels := strings.Split(strings.ToLower(t.Name())+"/"+name, "/")
	for i, l := range labels {
		labels[i] = strings.Trim(strings.Map(func(r rune) rune {
			if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
				return r
			}
			return '-'
		}, l), "-")
	}
	return strings.Join(labels, ".")
}

// open opens a Source of b, closed when t ends.
func open(t *testing.T, b *Backend) source.Source {
	t.Helper()
	s, err := b.Open(Context(t, 30*time.Second))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// leading returns b's Source for t, a resource of t's own, and the epoch
// with which node-a was just elected its leader.
func leading(t *testing.T, b *Backend) (source.Source, string, int64) {
	t.Helper()
	s := open(t, b)
	r := resource(t, "invoice-sweeper")
	e := b.Election.Acquire(t, r, "node-a")
	if e < 0 {
		t.Fatalf("Acquire returned epoch %d", e)
	}
	return s, r, e
}

// coalesced wraps s in source.Coalesce, closed when t ends.
func coalesced(t *testing.T, s source.Source) *source.Coalesced {
	c := source.Coalesce(s, 10*time.Second)
	t.Cleanup(func() { c.Close() })
	return c
}

// mustVerdicts checks, directly and through a Coalesced, that resource's
// leader is want and that each presented epoch gets its verdict.
func mustVerdicts(t *testing.T, s source.Source, resource string, want source.Leader, verdicts map[int64]Verdict) {
	t.Helper()
	c := coalesced(t, s)
	for _, via := range []source.Source{s, c} {
		MustLeader(t, via, resource, want)
		for epoch, v := range verdicts {
			MustCheck(t, via, resource, epoch, v)
		}
	}
	for epoch, v := range verdicts {
		if err := c.Check(Context(t, 10*time.Second), resource, epoch); VerdictOf(err) != v {
			t.Fatalf("Coalesced.Check(%q, %d) = %v, want %s", resource, epoch, err, v)
		}
	}
}

// testNoLeader: a resource never elected has no leader, and no epoch is
// admitted.
func testNoLeader(t *testing.T, h Harness) {
	s := open(t, h.Shared(t))
	r := resource(t, "never-elected")
	mustVerdicts(t, s, r, source.Leader{}, map[int64]Verdict{0: NoLeader, 1: NoLeader, math.MaxInt64: NoLeader})
	mustStale(t, source.Check(Current(t, s, r), r, 7), r, 7, 0, source.ReasonNoLeader)
}

// testLeader: the leader's epoch and holder are read; only its epoch is
// admitted, and an epoch above it was never issued.
func testLeader(t *testing.T, h Harness) {
	s, r, e := leading(t, h.Shared(t))
	mustVerdicts(t, s, r, h.leader(e, "node-a", true),
		map[int64]Verdict{e: Admit, e + 1: NotIssued, math.MaxInt64: NotIssued})
	mustNotIssued(t, source.Check(Current(t, s, r), r, e+1), r, e+1, e)
}

// testFirstEpoch: the first leader of a resource gets epoch 0 when the
// Harness says FirstEpochZero, and a positive epoch otherwise; either is
// admitted, and 0 is never "no leader" for a source that holds a leader.
func testFirstEpoch(t *testing.T, h Harness) {
	s, r, e := leading(t, h.Shared(t))
	switch {
	case h.FirstEpochZero && e != 0:
		t.Fatalf("first epoch %d, want 0 (the Harness says FirstEpochZero)", e)
	case !h.FirstEpochZero && e <= 0:
		t.Fatalf("first epoch %d, want a positive one", e)
	}
	mustVerdicts(t, s, r, h.leader(e, "node-a", true), map[int64]Verdict{e: Admit, e + 1: NotIssued})
}

// testTakeover: after a takeover, the old leader's epoch is stale below
// the new one's, which alone is admitted.
func testTakeover(t *testing.T, h Harness) {
	b := h.Shared(t)
	s, r, e1 := leading(t, b)
	b.Election.Lapse(t, r)
	e2 := b.Election.Acquire(t, r, "node-b")
	if e2 <= e1 {
		t.Fatalf("takeover epoch %d is not above %d", e2, e1)
	}
	verdicts := map[int64]Verdict{}
	for _, e := range []int64{0, 1, e1, e2 - 1} { // in order: e2 may be 1
		verdicts[e] = Superseded
	}
	verdicts[e2], verdicts[e2+1] = Admit, NotIssued
	mustVerdicts(t, s, r, h.leader(e2, "node-b", true), verdicts)
	mustStale(t, source.Check(Current(t, s, r), r, e1), r, e1, e2, "")
}

// testLapsed: once the leader's lease lapsed, its epoch is stale: the
// lease lapsed, or there is no leader any more.
func testLapsed(t *testing.T, h Harness) {
	b := h.Shared(t)
	s, r, e := leading(t, b)
	b.Election.Lapse(t, r)
	if !h.LapseKeepsLeader {
		mustVerdicts(t, s, r, source.Leader{}, map[int64]Verdict{e: NoLeader, e + 1: NoLeader})
		mustStale(t, source.Check(Current(t, s, r), r, e), r, e, 0, source.ReasonNoLeader)
		return
	}
	mustVerdicts(t, s, r, h.leader(e, "node-a", false),
		map[int64]Verdict{e: Lapsed, e - 1: Superseded, e + 1: NotIssued})
	mustStale(t, source.Check(Current(t, s, r), r, e), r, e, e, source.ReasonLapsed)
}

// testIndependentResources: each resource has its own leader.
func testIndependentResources(t *testing.T, h Harness) {
	b := h.Shared(t)
	s := open(t, b)
	r1, r2 := resource(t, "jobs"), resource(t, "jobs-2")
	e1 := b.Election.Acquire(t, r1, "node-a")
	e2 := b.Election.Acquire(t, r2, "node-b")
	MustLeader(t, s, r1, h.leader(e1, "node-a", true))
	MustLeader(t, s, r2, h.leader(e2, "node-b", true))
	b.Election.Lapse(t, r1)
	MustCheck(t, s, r2, e2, Admit)
	if h.LapseKeepsLeader {
		MustCheck(t, s, r1, e1, Lapsed)
	} else {
		MustCheck(t, s, r1, e1, NoLeader)
	}
}

// testConcurrentReads: one Source serves concurrent reads.
func testConcurrentReads(t *testing.T, h Harness) {
	s, r, e := leading(t, h.Shared(t))
	want := h.leader(e, "node-a", true)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for range 20 {
				l, err := s.Current(Context(t, 10*time.Second), r)
				if err == nil && l != want {
					t.Errorf("Current = %+v, want %+v", l, want)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent Current: %v", err)
	}
}
