package demo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/fencegw/fencegw/gateway/problem"
	"github.com/fencegw/fencegw/wire"

	"github.com/fencegw/fencegw/cmd/fencegw/internal/apiclient"
	"github.com/fencegw/fencegw/leader"
	"github.com/fencegw/fencegw/tokens"
)

// step is one beat of the story: what happens, and the function that makes
// it happen, narrates it, and checks that it went as told.
type step struct {
	name string
	run  func(*story, context.Context) error
}

// steps is the seed article's timeline, in order.
var steps = []step{
	{"the scene is set", (*story).setScene},
	{"node-a acquires the lease", (*story).nodeAAcquires},
	{"node-b campaigns and is refused", (*story).nodeBRefused},
	{"node-a sends a reminder", (*story).nodeAWrites},
	{"node-a renews its lease", (*story).nodeARenews},
	{"node-a freezes", (*story).nodeAFreezes},
	{"node-b takes over", (*story).nodeBTakesOver},
	{"the gateway fences node-a on the grant", (*story).fencedOnGrant},
	{"node-a wakes and its write is refused", (*story).nodeAWakes},
	{"the audit lists the refusal", (*story).refusalAudited},
	{"node-a steps down", (*story).nodeAStepsDown},
	{"node-b sends the reminder", (*story).nodeBWrites},
	{"the email API tells what it received", (*story).summary},
}

// story is what the steps share.
type story struct {
	w *world
	n *narrator
	a *nodeA
	b *nodeB // from the step that starts it

	acquired  time.Time     // when node-a asked for the lease
	leaseEnds time.Time     // node-a's lease runs at least until then
	frozen    time.Time     // when node-a froze
	termB     leader.Term   // node-b's term after the takeover
	takeover  time.Time     // when node-b was granted it
	refused   *wire.Problem // the answer to node-a's stale write
}

// tell runs the steps in order, until one fails, then stops the nodes.
func tell(ctx context.Context, w *world) *Failure {
	s := &story{w: w, n: w.n, a: newNodeA(w)}
	defer s.stop()
	for i, st := range steps {
		if err := st.run(s, ctx); err != nil {
			return s.n.failure(fmt.Sprintf("step %d (%s)", i+1, st.name), err)
		}
	}
	return nil
}

// stop stops the nodes after a failed step; after a story told whole,
// they have stopped already.
func (s *story) stop() {
	s.a.stop()
	if s.b != nil {
		s.b.stop()
	}
}

func (s *story) setScene(context.Context) error {
	s.n.say("demo", "a stale leader, fenced: the seed article's timeline in seconds (lease %s, renew deadline %s, retry %s)",
		leaseDuration, renewDeadline, retryPeriod)
	s.n.say("demo", "email API %s, gateway %s, control API %s", s.w.email.url, s.w.proxyURL, s.w.apiURL)
	s.n.say("demo", "embedded store in %s; signed route /email/ for resource %q; a fresh Ed25519 key",
		s.w.dir, resource)
	return nil
}

// nodeAAcquires: at t=0 node-a acquires the lease, at epoch 1.
func (s *story) nodeAAcquires(ctx context.Context) error {
	s.acquired = time.Now()
	if err := s.a.call(ctx, apiclient.OpAcquire); err != nil {
		return err
	}
	s.n.say("node-a", "POST /v1/leases/%s/acquire -> 200 OK: leader at epoch %d, with a signed token", resource, s.a.lease.Epoch)
	return nil
}

// nodeBRefused: node-b campaigns from the start, and is refused while
// node-a's lease runs.
func (s *story) nodeBRefused(ctx context.Context) error {
	var err error
	if s.b, err = startNodeB(ctx, s.w); err != nil {
		return fmt.Errorf("node-b: %w", err)
	}
	select {
	case no := <-s.b.firstNo:
		p := no.Problem
		if p == nil || p.Type != problem.TypeLeaseHeld || p.Holder != "node-a" || p.CurrentEpoch == nil {
			return fmt.Errorf("node-b: first acquire: want 409 lease-held by node-a, got %s", no)
		}
		s.n.say("node-b", "POST /v1/leases/%s/acquire -> 409 Conflict: held by node-a at epoch %d; node-b retries every %s",
			resource, *p.CurrentEpoch, retryPeriod)
		return nil
	case t := <-s.b.granted:
		return fmt.Errorf("node-b: granted epoch %d while node-a's lease ran", t.Epoch)
	case <-s.b.done:
		return fmt.Errorf("node-b: stopped campaigning: %w", s.b.err)
	case <-ctx.Done():
		return fmt.Errorf("node-b: no answer to its first acquire: %w", ctx.Err())
	}
}

// nodeAWrites: node-a's first reminder reaches the email API at epoch 1.
func (s *story) nodeAWrites(ctx context.Context) error {
	a, err := s.a.send(ctx, "INV-1001")
	if err != nil {
		return fmt.Errorf("node-a: first reminder: %w", err)
	}
	if a.Status != http.StatusOK {
		return fmt.Errorf("node-a: first reminder at epoch 1: want 200 from the email API, got %s", a)
	}
	if got := s.w.email.sent(); len(got) != 1 || got[0].epoch != 1 || !isTraceID(got[0].traceID) {
		return fmt.Errorf("node-a: first reminder: the email API should have one email, at epoch 1, with a trace id; has %+v", got)
	}
	s.n.say("node-a", "POST /email/send (INV-1001) with its epoch 1 token -> 200 OK")
	return nil
}

// nodeARenews: at t=1 node-a renews, as a leader does every lease/3; the
// epoch stays.
func (s *story) nodeARenews(ctx context.Context) error {
	if !sleep(ctx, time.Until(s.acquired.Add(leaseDuration/3))) {
		return ctx.Err()
	}
	renewed := time.Now()
	if err := s.a.call(ctx, apiclient.OpRenew); err != nil {
		return err
	}
	s.leaseEnds = renewed.Add(leaseDuration) // no earlier than this on the authority's clock
	s.n.say("node-a", "POST /v1/leases/%s/renew -> 200 OK: still epoch %d, lease runs to about %s",
		resource, s.a.lease.Epoch, s.n.at(s.leaseEnds))
	return nil
}

// nodeAFreezes: node-a freezes with its next write in hand.
func (s *story) nodeAFreezes(ctx context.Context) error {
	s.frozen = time.Now()
	s.a.freeze(ctx)
	s.n.say("node-a", "freezes (a stop-the-world pause) as it is about to send INV-1002: no more renewals")
	return nil
}

// nodeBTakesOver: the lease lapses; node-b takes over with epoch 2.
func (s *story) nodeBTakesOver(ctx context.Context) error {
	select {
	case s.termB = <-s.b.granted:
	case <-s.b.done:
		return fmt.Errorf("node-b: stopped campaigning: %w", s.b.err)
	case <-ctx.Done():
		return fmt.Errorf("node-b: not granted the lease after node-a's expired: %w", ctx.Err())
	}
	s.takeover = time.Now()
	if s.takeover.Before(s.leaseEnds) {
		return fmt.Errorf("node-b: granted the lease %s before node-a's could have expired", s.leaseEnds.Sub(s.takeover))
	}
	if s.termB.Epoch != 2 || s.termB.Token == "" {
		return fmt.Errorf("node-b: takeover: want epoch 2 with a token, got epoch %d", s.termB.Epoch)
	}
	s.n.say("node-b", "node-a's lease expired: acquire -> 200 OK, node-b leads at epoch %d", s.termB.Epoch)
	return nil
}

// fencedOnGrant: the grant raised the fence to epoch 2 before node-b
// wrote anything.
func (s *story) fencedOnGrant(ctx context.Context) error {
	var fence wire.FenceState
	if err := s.w.api.GetJSON(ctx, "/v1/fences/"+resource, &fence); err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	if fence.Epoch != 2 {
		return fmt.Errorf("gateway: the fence of %q is at epoch %d after node-b's grant, want 2", resource, fence.Epoch)
	}
	s.n.say("gateway", "GET /v1/fences/%s -> epoch %d: node-a is fenced before node-b writes anything (fence on grant)",
		resource, fence.Epoch)
	return nil
}

// nodeAWakes: node-a wakes and sends the write it was holding, with epoch
// 1; the gateway refuses it with 412, and it never reaches the email API.
func (s *story) nodeAWakes(ctx context.Context) error {
	if !sleep(ctx, oversleep) {
		return ctx.Err()
	}
	before := len(s.w.email.sent())
	s.n.say("node-a", "wakes after a %.1fs pause, sure it still leads at epoch 1, and sends INV-1002",
		time.Since(s.frozen).Seconds())
	refused, err := s.a.wakeUp()
	if err != nil {
		return fmt.Errorf("node-a: stale write: %w", err)
	}
	p := refused.Problem
	if refused.Status != http.StatusPreconditionFailed || p == nil || p.Type != problem.TypeStaleEpoch ||
		p.PresentedEpoch == nil || p.CurrentEpoch == nil {
		return fmt.Errorf("node-a: stale write at epoch 1: want 412 stale-epoch, got %s", refused)
	}
	if *p.PresentedEpoch != 1 || *p.CurrentEpoch != 2 || !isTraceID(p.TraceID) {
		return fmt.Errorf("node-a: stale write: want presented epoch 1, current epoch 2 and a trace id, got %d, %d, %q",
			*p.PresentedEpoch, *p.CurrentEpoch, p.TraceID)
	}
	if got := s.w.email.sent(); len(got) != before {
		return fmt.Errorf("email API: node-a's refused write reached it: %+v", got[before:])
	}
	s.refused = p
	s.n.say("node-a", "POST /email/send (INV-1002) with epoch 1 -> %d %s: presented epoch %d, current epoch %d, trace_id %s",
		refused.Status, http.StatusText(refused.Status), *p.PresentedEpoch, *p.CurrentEpoch, p.TraceID)
	return nil
}

// refusalAudited: the audit lists the stale write, by its trace id.
func (s *story) refusalAudited(ctx context.Context) error {
	// The audit is written to the store in the background, within
	// audit.flush of the refusal.
	id := s.refused.TraceID
	var audit wire.Rejections
	for deadline := time.Now().Add(5 * time.Second); ; {
		if err := s.w.api.GetJSON(ctx, "/v1/audit/rejections?resource="+resource, &audit); err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
		if len(audit.Rejections) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(audit.Rejections) != 1 || audit.Rejections[0].Count != 1 || !slices.Equal(audit.Rejections[0].TraceIDs, []string{id}) ||
		audit.Rejections[0].Decision != string(tokens.DecisionStale) {
		return fmt.Errorf("gateway: the audit should list the one stale write, of trace %s; it lists %+v", id, audit.Rejections)
	}
	s.n.say("gateway", "the email API never saw it; GET /v1/audit/rejections lists it: decision stale, trace %s", id)
	return nil
}

// nodeAStepsDown: node-a stepped down on the 412.
func (s *story) nodeAStepsDown(context.Context) error {
	if !s.a.steppedDown() {
		return errors.New("node-a: did not step down on the 412")
	}
	s.n.say("node-a", "steps down on the 412 (a newer epoch exists): it ends its sweep and leaves INV-1002 to the leader")
	return nil
}

// nodeBWrites: node-b sends the reminder node-a could not, then stops.
func (s *story) nodeBWrites(ctx context.Context) error {
	close(s.b.write)
	select {
	case err := <-s.b.written:
		if err != nil {
			return fmt.Errorf("node-b: %w", err)
		}
	case <-ctx.Done():
		return fmt.Errorf("node-b: reminder: %w", ctx.Err())
	}
	s.n.say("node-b", "POST /email/send (INV-1002) through its leader.Elector's Transport, epoch 2 token -> 200 OK")
	return s.b.stop()
}

// summary: the email API received one email from each node, and none from
// node-a after the takeover.
func (s *story) summary(context.Context) error {
	got := s.w.email.sent()
	fromA := 0
	for _, e := range got {
		switch {
		case e.sender == "node-a" && (e.epoch != 1 || !e.at.Before(s.takeover)):
			return fmt.Errorf("email API: an email from node-a at epoch %d arrived after the takeover", e.epoch)
		case e.sender == "node-a":
			fromA++
		case e.epoch != 2:
			return fmt.Errorf("email API: an email from %s at epoch %d, want 2", e.sender, e.epoch)
		}
	}
	if len(got) != 2 || fromA != 1 {
		return fmt.Errorf("email API: want 2 emails, one from each node, got %+v", got)
	}
	s.n.print("summary", "the email API received %d emails (epochs %d and %d), none from node-a after the takeover at %s",
		len(got), got[0].epoch, got[1].epoch, s.n.at(s.takeover))
	return nil
}

// sleep waits for d or ctx, reporting whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
