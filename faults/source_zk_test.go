package faults

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencegw/fencegw/internal/testutil/testzk"
)

// The ZooKeeper epoch source in the plan: a standalone server, and leaders
// that follow Curator's LeaderLatch recipe — an ephemeral sequential child
// of /election/{resource}, leading while it is the lowest, on a session of
// their own reached through a proxy of their own, so that a lapse is a
// session expiry (the leader's network blackholed past its session
// timeout), as when a leader's process froze.

// zkSession is the leaders' session timeout.
const zkSession = 2 * time.Second

// zkElectionRoot is the parent of the elections' znodes.
const zkElectionRoot = "/election"

// startZKSource starts a ZooKeeper server and creates the elections'
// parents; the route reads the election /election/{resource}.
func startZKSource(t *testing.T) *sourceEnv {
	srv := testzk.Start(t)
	// The observer, on a session of its own reached directly, tells when
	// a leader's node is gone.
	observer := srv.Conn(t, 10*time.Second)
	for _, p := range append([]string{zkElectionRoot}, electionPaths()...) {
		if _, err := observer.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	return &sourceEnv{
		route: sourceRoute{targets: []string{srv.Addr()}, resources: sourceResources(), yaml: func(addrs []string) string {
			return fmt.Sprintf(`{kind: zookeeper, servers: [%q], path: "%s/{resource}"}`, addrs[0], zkElectionRoot)
		}},
		ttl: zkSession,
		elector: func(t *testing.T, holder string) elector {
			p, err := NewProxy(srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			return &zkElector{proxy: p, observer: observer, holder: holder}
		},
		pause: srv.Pause, resume: srv.Resume, kill: srv.Stop, restart: srv.Restart,
	}
}

func electionPaths() []string {
	var ps []string
	for _, r := range sourceResources() {
		ps = append(ps, zkElectionRoot+"/"+r)
	}
	return ps
}

// zkElector is a LeaderLatch-style participant.
type zkElector struct {
	proxy    *Proxy // the leader's network
	observer *zk.Conn
	holder   string

	conn *zk.Conn // this term's session
	node string   // this term's node
}

// zkCampaign bounds a campaign: the session, the node, and the wait to be
// the lowest.
const zkCampaign = 3 * time.Second

// campaign opens a session, creates the node and waits (bounded) until it
// is the lowest child; then the epoch is its czxid. A participant that
// does not come to lead in time closes its session, dropping its node.
func (e *zkElector) campaign(resource string) (int64, bool) {
	deadline := time.Now().Add(zkCampaign)
	conn, events, err := zk.Connect([]string{e.proxy.Addr()}, zkSession, zk.WithLogger(quietZK{}), zk.WithLogInfo(false))
	if err != nil {
		return 0, false
	}
	e.conn = conn
	if !awaitSession(events, deadline) {
		e.conn.Close()
		return 0, false
	}
	parent := zkElectionRoot + "/" + resource
	node, err := conn.CreateProtectedEphemeralSequential(parent+"/latch-", []byte(e.holder), zk.WorldACL(zk.PermAll))
	if err != nil {
		e.conn.Close()
		return 0, false
	}
	e.node = node
	for time.Now().Before(deadline) {
		children, _, err := conn.Children(parent)
		if err != nil {
			break
		}
		if parent+"/"+lowestChild(children) == node {
			_, stat, err := conn.Exists(node)
			if err != nil || stat == nil {
				break
			}
			return stat.Czxid, true
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.conn.Close()
	return 0, false
}

// awaitSession waits until the client has its session, or deadline.
func awaitSession(events <-chan zk.Event, deadline time.Time) bool {
	timeout := time.After(time.Until(deadline))
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return true
			}
		case <-timeout:
			return false
		}
	}
}

// lowestChild is the child with the lowest 10-digit sequence suffix.
func lowestChild(children []string) string {
	best, bestSeq := "", int64(-1)
	for _, c := range children {
		if len(c) < 10 {
			continue
		}
		seq, err := strconv.ParseInt(c[len(c)-10:], 10, 64)
		if err == nil && (bestSeq < 0 || seq < bestSeq) {
			best, bestSeq = c, seq
		}
	}
	return best
}

// renew: the session is live and the node still there.
func (e *zkElector) renew() bool {
	if e.conn.State() != zk.StateHasSession {
		return false
	}
	ok, _, err := e.conn.Exists(e.node)
	return err == nil && ok
}

// resign closes the session, which deletes the node.
func (e *zkElector) resign() time.Time {
	e.conn.Close()
	return e.awaitGone(zkCampaign)
}

// lapse blackholes the leader's network until the server expired its
// session and deleted its node (bounded by a few session timeouts), then
// heals it and closes the expired session.
func (e *zkElector) lapse() time.Time {
	e.proxy.Set(Fault{Blackhole: true})
	gone := e.awaitGone(4 * zkSession)
	e.proxy.Set(Fault{})
	e.conn.Close()
	return gone
}

// awaitGone polls, through the observer, until the term's node is gone
// and returns when that read returned; zero when it was still there (or
// could not be read) within bound.
func (e *zkElector) awaitGone(bound time.Duration) time.Time {
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := e.observer.Sync(e.node); err != nil && !errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if ok, _, err := e.observer.Exists(e.node); err == nil && !ok {
			return time.Now()
		}
	}
	return time.Time{}
}

func (e *zkElector) close() {
	if e.conn != nil {
		e.conn.Close()
	}
}

// quietZK is a zk.Logger that discards everything.
type quietZK struct{}

func (quietZK) Printf(string, ...any) {}
