package etcdsource_test

import (
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/tokens/source"
	"github.com/fencegw/fencegw/tokens/source/etcdsource"
	"github.com/fencegw/fencegw/tokens/source/sourcetest"
)

const prefix = "/election/report-generator"

// TestElectionTimeline: what the contract does not drive. A view bound to
// one prefix ignores the resource name; a campaigner queued behind the
// leader holds a revision never issued to a leader; Proclaim changes the
// holder, never the epoch; after a resignation the next campaigner leads
// with a higher revision, and after the last one there is no leader.
func TestElectionTimeline(t *testing.T) {
	c := testetcd.Start(t, 1)
	cli := c.Client(t)
	src := etcdsource.New(cli)
	view := src.ForPrefix(prefix)
	coalesced := source.Coalesce(src.ForPrefix(prefix), 10*time.Second)
	defer coalesced.Close()

	e1 := concurrency.NewElection(session(t, cli, 10), prefix)
	campaign(t, e1, "node-a")
	rev1 := e1.Rev()
	a := source.Leader{Held: true, Epoch: rev1, Holder: "node-a", Live: true}
	sourcetest.MustLeader(t, view, "report-generator", a)
	sourcetest.MustLeader(t, view, "any name at all", a)
	sourcetest.MustLeader(t, src, prefix, a) // the resource name is the prefix
	if err := coalesced.Check(sourcetest.Context(t, 10*time.Second), "report-generator", rev1); err != nil {
		t.Fatalf("Check of the leader's revision through the view: %v", err)
	}

	e2 := concurrency.NewElection(session(t, cli, 10), prefix)
	won := campaignAsync(t, e2, "node-b")
	revs := waitKeys(t, cli, prefix, 2)
	if revs[0] != rev1 {
		t.Fatalf("oldest campaign key has revision %d, want the leader's %d", revs[0], rev1)
	}
	sourcetest.MustLeader(t, view, "", a)
	sourcetest.MustCheck(t, view, "report-generator", revs[1], sourcetest.NotIssued)

	if err := e1.Proclaim(sourcetest.Context(t, 10*time.Second), "node-a v2"); err != nil {
		t.Fatalf("Proclaim: %v", err)
	}
	sourcetest.MustLeader(t, view, "", source.Leader{Held: true, Epoch: rev1, Holder: "node-a v2", Live: true})

	if err := e1.Resign(sourcetest.Context(t, 10*time.Second)); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	won(t)
	rev2 := e2.Rev()
	sourcetest.MustLeader(t, view, "", source.Leader{Held: true, Epoch: rev2, Holder: "node-b", Live: true})
	sourcetest.MustCheck(t, view, "", rev1, sourcetest.Superseded)
	if err := coalesced.Check(sourcetest.Context(t, 10*time.Second), "report-generator", rev2); err != nil {
		t.Fatalf("Check of the new leader's revision through the view: %v", err)
	}

	if err := e2.Resign(sourcetest.Context(t, 10*time.Second)); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	sourcetest.MustLeader(t, view, "", source.Leader{})
	sourcetest.MustCheck(t, view, "", rev2, sourcetest.NoLeader)
}

// TestLeaderLosesLease: a leader whose session lease expires (it stopped
// keeping it alive: paused, partitioned) or whose session is closed loses
// its key; the rival queued behind it takes over, and the old epoch is
// stale from then on.
func TestLeaderLosesLease(t *testing.T) {
	c := testetcd.Start(t, 1)
	cli := c.Client(t)
	view := etcdsource.New(cli).ForPrefix(prefix)
	for _, tc := range []struct {
		name string
		ttl  int
		lose func(t *testing.T, s *concurrency.Session)
	}{
		{"lease expires", 1, func(t *testing.T, s *concurrency.Session) {
			s.Orphan() // no more keep-alives
			select {
			case <-s.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the session did not end")
			}
		}},
		{"session closed", 30, func(t *testing.T, s *concurrency.Session) {
			if err := s.Close(); err != nil {
				t.Fatalf("closing the session: %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s1 := session(t, cli, tc.ttl)
			e1 := concurrency.NewElection(s1, prefix)
			campaign(t, e1, "node-a")
			rev1 := e1.Rev()
			e2 := concurrency.NewElection(session(t, cli, 30), prefix)
			won := campaignAsync(t, e2, "node-b")
			waitKeys(t, cli, prefix, 2)
			sourcetest.MustCheck(t, view, "", rev1, sourcetest.Admit)

			tc.lose(t, s1)
			won(t)
			sourcetest.MustLeader(t, view, "", source.Leader{Held: true, Epoch: e2.Rev(), Holder: "node-b", Live: true})
			sourcetest.MustCheck(t, view, "", rev1, sourcetest.Superseded)
			if err := e2.Resign(sourcetest.Context(t, 10*time.Second)); err != nil {
				t.Fatalf("Resign: %v", err)
			}
		})
	}
}

// TestPrefixIsolation: an election reads only keys under its prefix plus
// "/", not a sibling whose name extends it nor a key named like the prefix.
func TestPrefixIsolation(t *testing.T) {
	c := testetcd.Start(t, 1)
	cli := c.Client(t)
	src := etcdsource.New(cli)

	if _, err := cli.Put(sourcetest.Context(t, 10*time.Second), "/e/a", "not a campaign key"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	ab := concurrency.NewElection(session(t, cli, 10), "/e/ab")
	campaign(t, ab, "ab-leader")
	sourcetest.MustLeader(t, src.ForPrefix("/e/a"), "", source.Leader{})
	a := concurrency.NewElection(session(t, cli, 10), "/e/a")
	campaign(t, a, "a-leader")
	if a.Rev() <= ab.Rev() {
		t.Fatalf("revisions %d, %d: the sibling must be older for this test", a.Rev(), ab.Rev())
	}
	sourcetest.MustLeader(t, src.ForPrefix("/e/a"), "", source.Leader{Held: true, Epoch: a.Rev(), Holder: "a-leader", Live: true})
	sourcetest.MustLeader(t, src, "/e/ab", source.Leader{Held: true, Epoch: ab.Rev(), Holder: "ab-leader", Live: true})

	for _, s := range []source.Source{src, src.ForPrefix("")} {
		_, err := s.Current(sourcetest.Context(t, 10*time.Second), "")
		sourcetest.MustUnavailable(t, "Current with an empty prefix", err)
		if !errors.Is(err, etcdsource.ErrEmptyPrefix) {
			t.Fatalf("Current with an empty prefix = %v, want ErrEmptyPrefix", err)
		}
	}
}
