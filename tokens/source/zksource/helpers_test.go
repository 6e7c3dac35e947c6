package zksource_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencegw/fencegw/internal/testutil/testzk"
	"github.com/fencegw/fencegw/tokens/source"
	"github.com/fencegw/fencegw/tokens/source/sourcetest"
	"github.com/fencegw/fencegw/tokens/source/zksource"
)

// root is the parent of the tests' elections: a resource R's election is
// root/R, as a Source opened with path root + "/{resource}" reads it.
const root = "/fencegw/elections"

// ensure creates path and its missing ancestors as persistent znodes.
func ensure(t *testing.T, c *zk.Conn, path string) {
	t.Helper()
	at := ""
	for _, seg := range strings.Split(path[1:], "/") {
		at += "/" + seg
		if _, err := c.Create(at, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("Create %s: %v", at, err)
		}
	}
}

// join names a participant as Curator's LeaderLatch does: a protected
// ephemeral sequential child "_c_<guid>-latch-<seq>" of election holding
// holder, in c's session. It returns the child's path and czxid.
func join(t *testing.T, c *zk.Conn, election, holder string) (string, int64) {
	t.Helper()
	ensure(t, c, election)
	p, err := c.CreateProtectedEphemeralSequential(election+"/latch-", []byte(holder), zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatalf("CreateProtectedEphemeralSequential under %s: %v", election, err)
	}
	// The leader learns its epoch the same way: the Stat of its own node.
	ok, stat, err := c.Exists(p)
	if err != nil || !ok {
		t.Fatalf("Exists %s = %v, %v", p, ok, err)
	}
	return p, stat.Czxid
}

// election makes participants join ZooKeeper elections, one session per
// leader, as the team's own service would.
type election struct {
	srv *testzk.Server

	mu       sync.Mutex
	sessions map[string]*zk.Conn // each resource's leader's
}

func newElection(srv *testzk.Server) *election {
	return &election{srv: srv, sessions: make(map[string]*zk.Conn)}
}

// Acquire joins the election root/resource in a new 30 s session, as the
// only participant, and returns its child's czxid.
func (e *election) Acquire(t *testing.T, resource, holder string) int64 {
	t.Helper()
	c := e.srv.Conn(t, 30*time.Second)
	_, czxid := join(t, c, root+"/"+resource, holder)
	e.mu.Lock()
	e.sessions[resource] = c
	e.mu.Unlock()
	return czxid
}

// Lapse ends the leader's session, as its expiry would without waiting for
// the timeout: ZooKeeper deletes its ephemeral child.
func (e *election) Lapse(t *testing.T, resource string) {
	t.Helper()
	e.mu.Lock()
	c := e.sessions[resource]
	e.mu.Unlock()
	if c == nil {
		t.Fatalf("Lapse(%q): no leader joined", resource)
	}
	c.Close()
}

// open opens a Source with o's Servers defaulting to srv's, closed when t
// ends.
func open(t *testing.T, srv *testzk.Server, o zksource.Options) *zksource.Source {
	t.Helper()
	if o.Servers == nil {
		o.Servers = srv.Servers()
	}
	s, err := zksource.Open(sourcetest.Context(t, 30*time.Second), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// backend reads and joins elections under root on srv.
func backend(srv *testzk.Server) *sourcetest.Backend {
	return &sourcetest.Backend{
		Open: func(ctx context.Context) (source.Source, error) {
			return zksource.Open(ctx, zksource.Options{Servers: srv.Servers(), Path: root + "/{resource}"})
		},
		Election: newElection(srv),
	}
}

// unreachable returns a loopback host:port where nothing listened a moment
// ago.
func unreachable(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}
