package faults

import (
	"time"
)

// Outcome is how an operation ended, as its client saw it.
type Outcome string

// The outcomes of operations.
const (
	// OutcomeAdmitted: the write was admitted and forwarded, and the
	// upstream's answer came back.
	OutcomeAdmitted Outcome = "admitted"
	// OutcomeReplayed: a write with an Idempotency-Key already used was
	// admitted by the fence and answered with the kept answer; it was not
	// forwarded.
	OutcomeReplayed Outcome = "replayed"
	// OutcomeHeld: admitted by the fence, not forwarded: its key's first
	// write is in flight or of unknown outcome (409).
	OutcomeHeld Outcome = "held"
	// OutcomeStale: refused with 412 stale-epoch, naming a current epoch.
	OutcomeStale Outcome = "stale"
	// OutcomeSuperseded: admitted, then refused with 412 before it was
	// forwarded (superseded, or its lease ran out on the way).
	OutcomeSuperseded Outcome = "superseded"
	// OutcomeCut: admitted and partly sent, then refused with 412 because
	// its lease ran out before the upstream's TCP acknowledged all of it:
	// the connection was reset, so the upstream may have received a torn
	// part of it, never the whole.
	OutcomeCut Outcome = "cut"
	// OutcomeUnavailable: 503, the store could not confirm; not forwarded.
	OutcomeUnavailable Outcome = "unavailable"
	// OutcomeRefused: another 4xx (a lease held, a lock-delay, a bad
	// token); not forwarded.
	OutcomeRefused Outcome = "refused"
	// OutcomeUnknown: no answer, or 502/504: it may or may not have been
	// admitted and forwarded.
	OutcomeUnknown Outcome = "unknown"
	// OutcomeValue: a read of the fence answered.
	OutcomeValue Outcome = "value"
)

// forwarded reports whether an operation that ended so must have reached
// the upstream exactly once (true), must not have reached it (false), or
// may have (ok false).
func (o Outcome) forwarded() (must, ok bool) {
	switch o {
	case OutcomeAdmitted:
		return true, true
	case OutcomeUnknown:
		return false, false
	default:
		return false, true
	}
}

// OpKind is what an operation did.
type OpKind string

// The kinds of operations.
const (
	OpWrite   OpKind = "write"   // a raw write: Fencing-Token is the epoch
	OpSigned  OpKind = "signed"  // a leader's write with its signed token
	OpRead    OpKind = "read"    // GET /v1/fences/{resource}
	OpAcquire OpKind = "acquire" // a lease acquire
	// OpSourced is a write on a route fenced by an epoch source: its
	// Fencing-Token is the epoch its leader took in the source.
	OpSourced OpKind = "sourced"
)

// isWrite reports whether operations of kind k are writes through the
// gateway's proxy (and so may reach the upstream).
func (k OpKind) isWrite() bool { return k == OpWrite || k == OpSigned || k == OpSourced }

// Op is one client operation as the workload saw it.
type Op struct {
	// ID is unique in the run; writes carry it to the upstream (X-Op).
	ID       string
	Client   int
	Replica  int
	Kind     OpKind
	Resource string
	Epoch    int64
	// Key is the write's Idempotency-Key ("" for none).
	Key     string
	Holder  string
	Outcome Outcome
	// Current is the current epoch a 412 named, or the value read.
	Current      int64
	Call, Return time.Time
}

// Receipt is one write as the upstream received it: from its handler's
// start (the head had arrived) to the end of its body.
type Receipt struct {
	OpID     string
	Replica  int // the replica it came through
	Resource string
	Key      string
	Holder   string
	Epoch    int64
	Start    time.Time
	End      time.Time
	Whole    bool
}

// Window is the span of one fault: injected from Start, healed from Heal.
type Window struct {
	// Kind names the fault (see the suite's nemesis table).
	Kind string
	// With names the faults made at the same time, if any.
	With []string
	// Replicas are the replicas the fault was aimed at (every replica
	// when nil).
	Replicas []int
	Start    time.Time
	// InForce is when the nemesis had made the fault (a store's kill
	// returns once the server is gone).
	InForce time.Time
	// Heal is when the nemesis began to heal the fault, Healed when it
	// was done (a restarted store accepts connections).
	Heal   time.Time
	Healed time.Time
	// StoreCut: the replicas could not reach the store, or the epoch
	// source of the writes they were sent, at all: nothing may be
	// admitted through them meanwhile.
	StoreCut bool
}

// affects reports whether the window was aimed at replica r.
func (w Window) affects(r int) bool {
	if w.Replicas == nil {
		return true
	}
	for _, x := range w.Replicas {
		if x == r {
			return true
		}
	}
	return false
}

// History is everything a run recorded.
type History struct {
	Ops      []Op
	Receipts []Receipt
	Windows  []Window
	// Leased names the resources that are leases: exclusivity is checked
	// across replicas for them, per replica for the others.
	Leased map[string]bool
	// Terms are the terms of leaders elected in an epoch source (see
	// SourceTerms).
	Terms []Term
	// End is when the workload stopped.
	End time.Time
}

// Term is one leader's term in an epoch source, as the leader knew it.
type Term struct {
	Resource string
	Holder   string
	Epoch    int64
	// Call is when the leader began to campaign, Acquired when it knew
	// it led: its lock was set, or its node was the lowest.
	Call, Acquired time.Time
	// Lost is a moment by which the source surely no longer held the term
	// (its lock released or expired, its node gone); zero when the leader
	// cannot tell (a command of unknown outcome could have extended it).
	Lost time.Time
	// Lapsed: the term ended by a lapse (the lock's PX ran out, the
	// session expired) rather than a release.
	Lapsed bool
}
