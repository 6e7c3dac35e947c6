package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
)

// The etcd epoch source in the plan: a one-member etcd embedded in the test
// process — so it is neither frozen nor killed here (it is not a process of
// its own); the network between each replica and it is. Leaders campaign
// with go.etcd.io/etcd/client/v3/concurrency on sessions of their own; a
// lapse is a session whose keepalives stopped (Orphan), as when a leader's
// process froze. An etcd source reads one election for the whole route, so
// its route has one fixed resource.

// etcdSessionTTL is the leaders' session lease, in seconds as etcd counts.
const etcdSessionTTL = 2

// etcdElection is the election's prefix.
const etcdElection = "/election/src-0"

// startEtcdSource starts a one-member etcd; the route reads the election
// etcdElection for its one resource.
func startEtcdSource(t *testing.T) *sourceEnv {
	cl := testetcd.Start(t, 1)
	observer := cl.Client(t)
	return &sourceEnv{
		route: sourceRoute{targets: cl.Endpoints(), resources: []string{"src-0"}, yaml: func(addrs []string) string {
			return fmt.Sprintf("{kind: etcd, endpoints: [%q], prefix: %q}", addrs[0], etcdElection)
		}},
		ttl: etcdSessionTTL * time.Second,
		elector: func(t *testing.T, holder string) elector {
			return &etcdElector{client: cl.Client(t), observer: observer, holder: holder}
		},
	}
}

// etcdElector is a participant in a concurrency.Election.
type etcdElector struct {
	client, observer *clientv3.Client
	holder           string

	session  *concurrency.Session // this term's
	election *concurrency.Election
	key      string // the leader key
}

// etcdCampaign bounds a campaign, and each call of a leader.
const etcdCampaign = 3 * time.Second

// campaign opens a session and campaigns (bounded); the epoch is the
// leader key's create revision. A campaign that times out deletes its key
// and closes the session.
func (e *etcdElector) campaign(resource string) (int64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), etcdCampaign)
	defer cancel()
	s, err := concurrency.NewSession(e.client, concurrency.WithTTL(etcdSessionTTL), concurrency.WithContext(context.Background()))
	if err != nil {
		return 0, false
	}
	el := concurrency.NewElection(s, etcdElection)
	if err := el.Campaign(ctx, e.holder); err != nil {
		s.Close()
		return 0, false
	}
	e.session, e.election, e.key = s, el, el.Key()
	return el.Rev(), true
}

// renew: the session's keepalives go on by themselves; it leads while the
// session is not done.
func (e *etcdElector) renew() bool {
	select {
	case <-e.session.Done():
		return false
	default:
		return true
	}
}

// resign deletes the leader key; once that returned the election no
// longer holds the term. Then it revokes the session.
func (e *etcdElector) resign() time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), etcdCampaign)
	defer cancel()
	var gone time.Time
	if err := e.election.Resign(ctx); err == nil {
		gone = time.Now()
	} else {
		gone = e.awaitGone(etcdCampaign)
	}
	e.session.Close()
	return gone
}

// lapse stops the session's keepalives and waits until its lease expired
// and the leader key is gone.
func (e *etcdElector) lapse() time.Time {
	e.session.Orphan()
	return e.awaitGone(4 * etcdSessionTTL * time.Second)
}

// awaitGone polls, through the observer, until the leader key is gone and
// returns when that read returned; zero when it was still there (or could
// not be read) within bound.
func (e *etcdElector) awaitGone(bound time.Duration) time.Time {
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := e.observer.Get(ctx, e.key, clientv3.WithCountOnly())
		cancel()
		if err == nil && resp.Count == 0 {
			return time.Now()
		}
	}
	return time.Time{}
}

func (e *etcdElector) close() {}
