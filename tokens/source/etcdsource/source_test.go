package etcdsource_test

import (
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fencegw/fencegw/internal/testetcd"
	"github.com/fencegw/fencegw/tokens/source"
	"github.com/fencegw/fencegw/tokens/source/etcdsource"
)

const prefix = "/election/report-generator"

// TestElectionTimeline: two campaigners of one election; the leader's Rev()
// is the epoch; after it resigns the other leads with a higher revision
// and the old epoch is stale.
func TestElectionTimeline(t *testing.T) {
	c := testetcd.Start(t, 1)
	cli := c.Client(t)
	src := etcdsource.New(cli)
	view := src.ForPrefix(prefix)
	coalesced := source.Coalesce(src.ForPrefix(prefix), 10*time.Second)

	mustLeader(t, view, "report-generator", source.Leader{})
	mustCheck(t, view, "report-generator", 1, noLeader)

	e1 := concurrency.NewElection(session(t, cli, 10), prefix)
	campaign(t, e1, "node-a")
	rev1 := e1.Rev()
	a := source.Leader{Epoch: rev1, Holder: "node-a", Live: true}
	for _, s := range []source.Source{view, coalesced} {
		mustLeader(t, s, "report-generator", a)
		mustLeader(t, s, "any name at all", a) // the view ignores it
		mustCheck(t, s, "report-generator", rev1, admit)
		mustCheck(t, s, "report-generator", rev1+1, ahead)
		mustCheck(t, s, "report-generator", rev1-1, superseded)
	}
	mustLeader(t, src, prefix, a) // the resource name is the prefix

	// A second campaigner queues behind node-a: its key's revision was
	// never a leader's, so presenting it is ahead.
	e2 := concurrency.NewElection(session(t, cli, 10), prefix)
	won := campaignAsync(t, e2, "node-b")
	revs := waitKeys(t, cli, prefix, 2)
	if revs[0] != rev1 {
		t.Fatalf("oldest campaign key has revision %d, want the leader's %d", revs[0], rev1)
	}
	mustLeader(t, view, "", a)
	mustCheck(t, view, "report-generator", revs[1], ahead)

	// Proclaim changes the holder, never the epoch.
	if err := e1.Proclaim(ctx(t, 10*time.Second), "node-a v2"); err != nil {
		t.Fatalf("Proclaim: %v", err)
	}
	mustLeader(t, view, "", source.Leader{Epoch: rev1, Holder: "node-a v2", Live: true})

	if err := e1.Resign(ctx(t, 10*time.Second)); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	if err := recv(t, "node-b's campaign", won); err != nil {
		t.Fatalf("node-b's campaign: %v", err)
	}
	rev2 := e2.Rev()
	if rev2 <= rev1 {
		t.Fatalf("new leader's revision %d is not above the old %d", rev2, rev1)
	}
	b := source.Leader{Epoch: rev2, Holder: "node-b", Live: true}
	for _, s := range []source.Source{view, coalesced} {
		mustLeader(t, s, "report-generator", b)
		mustCheck(t, s, "report-generator", rev1, superseded)
		mustCheck(t, s, "report-generator", rev2, admit)
		mustCheck(t, s, "report-generator", rev2+1, ahead)
	}

	// The leader's session ends: no leader, and its epoch is refused.
	if err := e2.Resign(ctx(t, 10*time.Second)); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	mustLeader(t, view, "", source.Leader{})
	mustCheck(t, view, "", rev2, noLeader)
	if err := coalesced.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestLeaderLeaseExpires: a leader that stops keeping its session alive
// (paused, partitioned) loses its key when the lease expires; a rival takes
// over, and the paused leader's epoch is stale from then on.
func TestLeaderLeaseExpires(t *testing.T) {
	c := testetcd.Start(t, 1)
	cli := c.Client(t)
	view := etcdsource.New(cli).ForPrefix(prefix)

	s1 := session(t, cli, 1)
	e1 := concurrency.NewElection(s1, prefix)
	campaign(t, e1, "node-a")
	rev1 := e1.Rev()
	e2 := concurrency.NewElection(session(t, cli, 10), prefix)
	won := campaignAsync(t, e2, "node-b")
	waitKeys(t, cli, prefix, 2)
	mustCheck(t, view, "", rev1, admit)

	s1.Orphan() // node-a freezes: no more keep-alives
	if err := recv(t, "node-b's campaign", won); err != nil {
		t.Fatalf("node-b's campaign: %v", err)
	}
	select {
	case <-s1.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("node-a's session did not end")
	}
	rev2 := e2.Rev()
	mustLeader(t, view, "", source.Leader{Epoch: rev2, Holder: "node-b", Live: true})
	mustCheck(t, view, "", rev1, superseded)
	mustCheck(t, view, "", rev2, admit)
}

// TestSessionClosed: closing the leader's session revokes its key at once.
func TestSessionClosed(t *testing.T) {
	c := testetcd.Start(t, 1)
	cli := c.Client(t)
	view := etcdsource.New(cli).ForPrefix(prefix)

	s1, err := concurrency.NewSession(cli, concurrency.WithTTL(30))
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	e1 := concurrency.NewElection(s1, prefix)
	campaign(t, e1, "node-a")
	rev1 := e1.Rev()
	e2 := concurrency.NewElection(session(t, cli, 30), prefix)
	won := campaignAsync(t, e2, "node-b")
	waitKeys(t, cli, prefix, 2)
	if err := s1.Close(); err != nil {
		t.Fatalf("closing node-a's session: %v", err)
	}
	if err := recv(t, "node-b's campaign", won); err != nil {
		t.Fatalf("node-b's campaign: %v", err)
	}
	mustCheck(t, view, "", rev1, superseded)
	mustCheck(t, view, "", e2.Rev(), admit)
}

// TestPrefixIsolation: an election reads only keys under its prefix plus
// "/", not a sibling whose name extends it nor a key named like the prefix.
func TestPrefixIsolation(t *testing.T) {
	c := testetcd.Start(t, 1)
	cli := c.Client(t)
	src := etcdsource.New(cli)

	if _, err := cli.Put(ctx(t, 10*time.Second), "/e/a", "not a campaign key"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	ab := concurrency.NewElection(session(t, cli, 10), "/e/ab")
	campaign(t, ab, "ab-leader")
	mustLeader(t, src.ForPrefix("/e/a"), "", source.Leader{})
	a := concurrency.NewElection(session(t, cli, 10), "/e/a")
	campaign(t, a, "a-leader")
	if a.Rev() <= ab.Rev() {
		t.Fatalf("revisions %d, %d: the sibling must be older for this test", a.Rev(), ab.Rev())
	}
	mustLeader(t, src.ForPrefix("/e/a"), "", source.Leader{Epoch: a.Rev(), Holder: "a-leader", Live: true})
	mustLeader(t, src, "/e/ab", source.Leader{Epoch: ab.Rev(), Holder: "ab-leader", Live: true})

	if _, err := src.Current(ctx(t, 10*time.Second), ""); !errors.Is(err, etcdsource.ErrEmptyPrefix) {
		t.Fatalf("Current with an empty prefix = %v, want ErrEmptyPrefix", err)
	}
	if _, err := src.ForPrefix("").Current(ctx(t, 10*time.Second), "r"); !errors.Is(err, etcdsource.ErrEmptyPrefix) {
		t.Fatalf("ForPrefix(\"\").Current = %v, want ErrEmptyPrefix", err)
	}
}
