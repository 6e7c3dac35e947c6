// Package testetcd runs real etcd servers inside the test process, through
// go.etcd.io/etcd/server/v3/embed, so that store tests talk to a genuine
// cluster instead of a mock.
//
// A Cluster has 1 or 3 members listening on loopback ports picked once at
// Start and kept across restarts. Members keep their data under the test's
// TempDir, fsync is off and raft ticks are short: the cluster is fast to
// start and to elect, and it is durable only across member restarts within
// one test, which is all a test needs.
//
// The methods of a Cluster must be called from the goroutine running the test
// that started it (or one of its subtests): on failure they call Fatalf on
// that test.
package testetcd

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/fencegw/fencegw/internal/testutil/testproc"
)

const (
	// tickMs and electionMs are the raft heartbeat and election timeouts.
	// They are short so that elections after a member stops take a fraction
	// of a second, yet long enough that a race-instrumented process does not
	// miss heartbeats and re-elect spuriously.
	tickMs     = 20
	electionMs = 200

	// readyTimeout bounds every wait for members to be ready or to agree on
	// a leader.
	readyTimeout = 30 * time.Second
	// bindRetry bounds how long a restarting member retries its ports while
	// they are transiently in use.
	bindRetry = 10 * time.Second
	// startAttempts is how many sets of fresh ports Start tries before
	// giving up when another process takes one of them first.
	startAttempts = 3
)

// Cluster is a running embedded etcd cluster. Create it with Start.
type Cluster struct {
	tb    testing.TB
	token string

	mu      sync.Mutex // guards members' etcd fields
	members []*member
}

// member is one etcd server of a Cluster: its identity and ports are fixed
// for the life of the Cluster, etcd is nil while the member is stopped.
type member struct {
	name   string
	dir    string
	client url.URL
	peer   url.URL
	etcd   *embed.Etcd
}

// Start starts a cluster of members servers (1 or 3) on free loopback ports,
// with data under tb.TempDir(), and waits until every member is ready and
// they agree on a leader. The cluster is stopped at tb.Cleanup.
func Start(tb testing.TB, members int) *Cluster {
	tb.Helper()
	if members != 1 && members != 3 {
		tb.Fatalf("testetcd: %d members requested, want 1 or 3", members)
	}
	base := tb.TempDir() // before Cleanup(Stop): cleanups run last-in first-out
	c := &Cluster{tb: tb, token: fmt.Sprintf("testetcd-%016x", rand.Uint64())}
	tb.Cleanup(c.Stop)

	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		ports, err := testproc.FreePorts(2 * members)
		if err != nil {
			tb.Fatalf("testetcd: %v", err)
		}
		c.members = make([]*member, members)
		for i := range c.members {
			name := fmt.Sprintf("m%d", i)
			c.members[i] = &member{
				name:   name,
				dir:    filepath.Join(base, fmt.Sprintf("try%d", attempt), name),
				client: url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i])},
				peer:   url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])},
			}
		}
		lastErr = c.startAll(embed.ClusterStateFlagNew)
		if lastErr == nil {
			c.waitReady()
			return c
		}
		c.Stop()
		if !isAddrInUse(lastErr) {
			break
		}
	}
	tb.Fatalf("testetcd: starting %d-member cluster: %v", members, lastErr)
	return nil
}

// Endpoints returns the client endpoints ("127.0.0.1:PORT", no scheme) of
// every member of the cluster, running or stopped, in member order.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, len(c.members))
	for i, m := range c.members {
		eps[i] = m.client.Host
	}
	return eps
}

// Client returns a client of all the cluster's endpoints, with its logs
// discarded. It is closed at tb.Cleanup, before the cluster stops if tb is
// the test that started it or one of its subtests.
func (c *Cluster) Client(tb testing.TB) *clientv3.Client {
	tb.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   c.Endpoints(),
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		tb.Fatalf("testetcd: client: %v", err)
	}
	tb.Cleanup(func() { _ = cli.Close() })
	return cli
}

// StopMember stops member i (closing its server), keeping its data and
// ports. If the members still running form a quorum, it returns once they
// agree on a leader, so that the next request does not race an election.
// Stopping a stopped member does nothing.
func (c *Cluster) StopMember(i int) {
	c.tb.Helper()
	m := c.member(i)
	c.mu.Lock()
	e := m.etcd
	m.etcd = nil
	c.mu.Unlock()
	if e == nil {
		return
	}
	e.Close()
	if c.hasQuorum() {
		c.waitLeader()
	}
}

// RestartMember starts the stopped member i again with the same name, data
// and ports, as an existing member of the cluster. If the running members
// then form a quorum it waits until they are all ready and agree on a
// leader; otherwise it returns as soon as the member is started. Restarting
// a running member does nothing.
func (c *Cluster) RestartMember(i int) {
	c.tb.Helper()
	m := c.member(i)
	c.mu.Lock()
	running := m.etcd != nil
	c.mu.Unlock()
	if running {
		return
	}
	if err := c.restart(m); err != nil {
		c.tb.Fatalf("testetcd: restarting member %d: %v", i, err)
	}
	if c.hasQuorum() {
		c.waitReady()
	}
}

// Stop stops every running member at once, keeping data and ports. Unlike
// StopMember it does not hand leadership over first (there is no one left to
// take it; trying would wait for etcd's request timeout): each server's raft
// loop is stopped, then the server is closed. It is safe to call more than
// once.
func (c *Cluster) Stop() {
	c.mu.Lock()
	var running []*embed.Etcd
	for _, m := range c.members {
		if m.etcd != nil {
			running = append(running, m.etcd)
			m.etcd = nil
		}
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range running {
		wg.Go(func() {
			e.Server.HardStop()
			e.Close()
		})
	}
	wg.Wait()
}

// Restart stops every running member, starts all members again from their
// data and waits until they are ready and agree on a leader.
func (c *Cluster) Restart() {
	c.tb.Helper()
	c.Stop()
	for i, m := range c.members {
		if err := c.restart(m); err != nil {
			c.tb.Fatalf("testetcd: restarting member %d: %v", i, err)
		}
	}
	c.waitReady()
}

func (c *Cluster) member(i int) *member {
	c.tb.Helper()
	if i < 0 || i >= len(c.members) {
		c.tb.Fatalf("testetcd: no member %d in a %d-member cluster", i, len(c.members))
	}
	return c.members[i]
}

// startAll starts every member without waiting for any of them: members of a
// new cluster only become ready once a quorum of them runs.
func (c *Cluster) startAll(state string) error {
	for _, m := range c.members {
		if err := c.start(m, state); err != nil {
			return fmt.Errorf("member %s: %w", m.name, err)
		}
	}
	return nil
}

// restart starts m as an existing member, retrying for a while if one of its
// ports is transiently in use.
func (c *Cluster) restart(m *member) error {
	deadline := time.Now().Add(bindRetry)
	for {
		err := c.start(m, embed.ClusterStateFlagExisting)
		if err == nil || !isAddrInUse(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *Cluster) start(m *member, state string) error {
	e, err := embed.StartEtcd(c.config(m, state))
	if err != nil {
		return err
	}
	c.mu.Lock()
	m.etcd = e
	c.mu.Unlock()
	return nil
}

func (c *Cluster) config(m *member, state string) *embed.Config {
	peers := make([]string, len(c.members))
	for i, o := range c.members {
		peers[i] = o.name + "=" + o.peer.String()
	}
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ListenClientUrls = []url.URL{m.client}
	cfg.AdvertiseClientUrls = []url.URL{m.client}
	cfg.ListenPeerUrls = []url.URL{m.peer}
	cfg.AdvertisePeerUrls = []url.URL{m.peer}
	cfg.InitialCluster = strings.Join(peers, ",")
	cfg.InitialClusterToken = c.token
	cfg.ClusterState = state
	cfg.TickMs = tickMs
	cfg.ElectionMs = electionMs
	cfg.SnapshotCount = 1000
	cfg.SnapshotCatchUpEntries = 100
	cfg.UnsafeNoFsync = true
	cfg.EnableGRPCGateway = false
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	return cfg
}

// running returns the servers of the running members.
func (c *Cluster) running() []*embed.Etcd {
	c.mu.Lock()
	defer c.mu.Unlock()
	var es []*embed.Etcd
	for _, m := range c.members {
		if m.etcd != nil {
			es = append(es, m.etcd)
		}
	}
	return es
}

func (c *Cluster) hasQuorum() bool {
	return len(c.running()) > len(c.members)/2
}

// waitReady waits until every running member is ready (it has joined a
// cluster with a leader and published itself) and they agree on a leader.
func (c *Cluster) waitReady() {
	c.tb.Helper()
	timeout := time.NewTimer(readyTimeout)
	defer timeout.Stop()
	for _, e := range c.running() {
		select {
		case <-e.Server.ReadyNotify():
		case err := <-e.Err():
			c.tb.Fatalf("testetcd: member %s failed: %v", e.Config().Name, err)
		case <-timeout.C:
			c.tb.Fatalf("testetcd: member %s not ready after %v", e.Config().Name, readyTimeout)
		}
	}
	c.waitLeader()
}

// Leader returns the index (as StopMember takes it) of the member the
// running members agree is the raft leader. While they do not agree yet —
// an election is under way, or a restarted member has not heard of the
// leader — it waits, up to readyTimeout. It returns -1 at once if the
// running members form no quorum, and -1 if they have not agreed on a
// leader by then. Unlike the other methods it never fails the test, so a
// nemesis may call it from any goroutine.
func (c *Cluster) Leader() int {
	if !c.hasQuorum() {
		return -1
	}
	deadline := time.Now().Add(readyTimeout)
	for {
		if i := c.agreedLeader(); i >= 0 || time.Now().After(deadline) {
			return i
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// agreedLeader returns the index of the member that all running members
// name as their leader, or -1 if they name none, or different ones, or a
// member that is not running.
func (c *Cluster) agreedLeader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	lead, leader := uint64(0), -1
	for i, m := range c.members {
		if m.etcd == nil {
			continue
		}
		l := uint64(m.etcd.Server.Leader())
		if l == 0 || (lead != 0 && l != lead) {
			return -1
		}
		lead = l
		if uint64(m.etcd.Server.MemberID()) == l {
			leader = i
		}
	}
	return leader
}

// waitLeader waits until all running members name the same leader and that
// leader is one of them.
func (c *Cluster) waitLeader() {
	c.tb.Helper()
	deadline := time.Now().Add(readyTimeout)
	for c.agreedLeader() < 0 {
		if time.Now().After(deadline) {
			c.tb.Fatalf("testetcd: no agreed leader among %d running members after %v", len(c.running()), readyTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
