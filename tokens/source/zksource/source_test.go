package zksource_test

import (
	"errors"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencegw/fencegw/internal/testutil/testzk"
	"github.com/fencegw/fencegw/tokens/source"
	"github.com/fencegw/fencegw/tokens/source/sourcetest"
	"github.com/fencegw/fencegw/tokens/source/zksource"
)

// TestElectionTimeline: what the contract does not drive, on one election
// path without {resource} (it answers for every resource). A participant
// queued behind the leader holds a czxid never issued to a leader; setting
// the leader's data changes the holder, never the epoch; children that are
// not sequential take no part; after the leader leaves, the next one leads
// with a higher czxid, and after the last one there is no leader.
func TestElectionTimeline(t *testing.T) {
	srv := testzk.Start(t)
	const election = "/services/report-generator/leader"
	src := open(t, srv, zksource.Options{Path: election})
	c1, c2 := srv.Conn(t, 30*time.Second), srv.Conn(t, 30*time.Second)

	ensure(t, c1, election+"/config") // persistent, no sequence: not a participant
	sourcetest.MustLeader(t, src, "report-generator", source.Leader{})
	p1, e1 := join(t, c1, election, "node-a")
	a := source.Leader{Held: true, Epoch: e1, Holder: "node-a", Live: true}
	sourcetest.MustLeader(t, src, "report-generator", a)
	sourcetest.MustLeader(t, src, "any name at all", a)

	_, e2 := join(t, c2, election, "node-b")
	if e2 <= e1 {
		t.Fatalf("czxid %d of the second participant is not above %d", e2, e1)
	}
	sourcetest.MustLeader(t, src, "", a)
	sourcetest.MustCheck(t, src, "report-generator", e2, sourcetest.NotIssued)

	if _, err := c1.Set(p1, []byte("node-a v2"), -1); err != nil {
		t.Fatalf("Set: %v", err)
	}
	sourcetest.MustLeader(t, src, "", source.Leader{Held: true, Epoch: e1, Holder: "node-a v2", Live: true})
	if _, err := c1.Set(p1, nil, -1); err != nil {
		t.Fatalf("Set: %v", err)
	}
	sourcetest.MustLeader(t, src, "", source.Leader{Held: true, Epoch: e1, Holder: path.Base(p1), Live: true})

	if err := c1.Delete(p1, -1); err != nil { // the leader resigns
		t.Fatalf("Delete: %v", err)
	}
	sourcetest.MustLeader(t, src, "", source.Leader{Held: true, Epoch: e2, Holder: "node-b", Live: true})
	sourcetest.MustCheck(t, src, "", e1, sourcetest.Superseded)
	sourcetest.MustCheck(t, src, "", e2, sourcetest.Admit)

	c2.Close() // its session ends: ZooKeeper deletes the ephemeral child
	sourcetest.MustLeader(t, src, "", source.Leader{})
	sourcetest.MustCheck(t, src, "", e2, sourcetest.NoLeader)
}

// TestLock: go-zookeeper's Lock (the recipe of Curator's
// InterProcessMutex, "_c_<guid>-lock-<seq>" with no data) is read the same
// way; with no data the holder is the child's name.
func TestLock(t *testing.T) {
	srv := testzk.Start(t)
	const lockPath = "/locks/invoices"
	src := open(t, srv, zksource.Options{Path: lockPath})
	c := srv.Conn(t, 30*time.Second)
	ensure(t, c, lockPath)
	l := zk.NewLock(c, lockPath, zk.WorldACL(zk.PermAll))
	if err := l.Lock(); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	children, _, err := c.Children(lockPath)
	if err != nil || len(children) != 1 || !strings.Contains(children[0], "-lock-") {
		t.Fatalf("Children(%s) = %q, %v; want one lock child", lockPath, children, err)
	}
	_, stat, err := c.Exists(lockPath + "/" + children[0])
	if err != nil {
		t.Fatalf("Exists: %v", err)
	}
	sourcetest.MustLeader(t, src, "invoices", source.Leader{Held: true, Epoch: stat.Czxid, Holder: children[0], Live: true})
	if err := l.Unlock(); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	sourcetest.MustLeader(t, src, "invoices", source.Leader{})
}

// TestResourcePath: {resource} selects each resource's election, anywhere
// in the path; a resource that makes the path invalid fails closed.
func TestResourcePath(t *testing.T) {
	srv := testzk.Start(t)
	src := open(t, srv, zksource.Options{Path: "/tenants/{resource}/leader"})
	c := srv.Conn(t, 30*time.Second)
	_, e42 := join(t, c, "/tenants/tenant-42/leader", "node-a")
	_, e7 := join(t, c, "/tenants/tenant-7/leader", "node-b")
	sourcetest.MustLeader(t, src, "tenant-42", source.Leader{Held: true, Epoch: e42, Holder: "node-a", Live: true})
	sourcetest.MustLeader(t, src, "tenant-7", source.Leader{Held: true, Epoch: e7, Holder: "node-b", Live: true})
	sourcetest.MustLeader(t, src, "tenant-8", source.Leader{})
	for _, r := range []string{"", "..", ".", "a//b", "bad\x01"} {
		_, err := src.Current(sourcetest.Context(t, 10*time.Second), r)
		sourcetest.MustUnavailable(t, "Current of resource "+r, err)
		if !errors.Is(err, zksource.ErrInvalidPath) {
			t.Fatalf("Current(%q) = %v, want ErrInvalidPath", r, err)
		}
	}
}

// TestOptions: options that cannot be used fail Open at once, naming the
// field; an ensemble out of reach fails Open when its context ends.
func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    zksource.Options
		want string
	}{
		{"no servers", zksource.Options{Path: "/e"}, "Servers is empty"},
		{"no port", zksource.Options{Servers: []string{"zk1"}, Path: "/e"}, "Servers[0]"},
		{"no path", zksource.Options{Servers: []string{"zk1:2181"}}, "Path"},
		{"relative", zksource.Options{Servers: []string{"zk1:2181"}, Path: "e/f"}, "not absolute"},
		{"root", zksource.Options{Servers: []string{"zk1:2181"}, Path: "/"}, "root"},
		{"trailing slash", zksource.Options{Servers: []string{"zk1:2181"}, Path: "/e/"}, "segment"},
		{"dot dot", zksource.Options{Servers: []string{"zk1:2181"}, Path: "/e/../f"}, "segment"},
		{"other placeholder", zksource.Options{Servers: []string{"zk1:2181"}, Path: "/e/{segment:1}"}, "only placeholder"},
		{"negative timeout", zksource.Options{Servers: []string{"zk1:2181"}, Path: "/e", SessionTimeout: -time.Second}, "SessionTimeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := zksource.Open(sourcetest.Context(t, 10*time.Second), tc.o)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%+v) succeeded", tc.o)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open error %q does not mention %q", err, tc.want)
			}
		})
	}
	start := time.Now()
	s, err := zksource.Open(sourcetest.Context(t, time.Second), zksource.Options{Servers: []string{unreachable(t)}, Path: "/e"})
	if err == nil {
		s.Close()
		t.Fatal("Open of an unreachable ensemble succeeded")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Open took %v with a 1 s context", took)
	}
}
