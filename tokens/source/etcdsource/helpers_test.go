package etcdsource_test

import (
	"context"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/tokens/source"
	"github.com/fencegw/fencegw/tokens/source/etcdsource"
	"github.com/fencegw/fencegw/tokens/source/sourcetest"
)

// session starts a concurrency session with a ttl-second lease, closed
// when t ends.
func session(t *testing.T, cli *clientv3.Client, ttl int) *concurrency.Session {
	t.Helper()
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(ttl))
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// campaign wins the election or fails t.
func campaign(t *testing.T, e *concurrency.Election, val string) {
	t.Helper()
	if err := e.Campaign(sourcetest.Context(t, 10*time.Second), val); err != nil {
		t.Fatalf("Campaign(%q): %v", val, err)
	}
}

// campaignAsync starts a campaign that blocks until it wins; the returned
// function waits for the win and fails t when the campaign failed or had
// not won within 30 s of its start.
func campaignAsync(t *testing.T, e *concurrency.Election, val string) (won func(t *testing.T)) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	done := make(chan error, 1)
	go func() {
		defer cancel()
		done <- e.Campaign(c, val)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return func(t *testing.T) {
		t.Helper()
		err := <-done
		done <- err // for the cleanup
		if err != nil {
			t.Fatalf("Campaign(%q): %v", val, err)
		}
	}
}

// keys returns the create revisions of the campaign keys under prefix+"/",
// oldest first.
func keys(t *testing.T, cli *clientv3.Client, prefix string) []int64 {
	t.Helper()
	resp, err := cli.Get(sourcetest.Context(t, 10*time.Second), prefix+"/", clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		t.Fatalf("Get %s/: %v", prefix, err)
	}
	revs := make([]int64, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		revs[i] = kv.CreateRevision
	}
	return revs
}

// waitKeys waits until prefix+"/" holds n campaign keys.
func waitKeys(t *testing.T, cli *clientv3.Client, prefix string, n int) []int64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		revs := keys(t, cli, prefix)
		if len(revs) == n {
			return revs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d campaign keys under %s/, want %d", len(revs), prefix, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// election campaigns in etcd elections, one session per leader, as the
// team's own service would.
type election struct {
	cli *clientv3.Client

	mu       sync.Mutex
	sessions map[string]*concurrency.Session // each resource's leader's
}

func newElection(cli *clientv3.Client) *election {
	return &election{cli: cli, sessions: make(map[string]*concurrency.Session)}
}

// Acquire campaigns for the election whose prefix is resource, in a new
// session with a 60 s lease, and returns Election.Rev().
func (e *election) Acquire(t *testing.T, resource, holder string) int64 {
	t.Helper()
	s := session(t, e.cli, 60)
	el := concurrency.NewElection(s, resource)
	campaign(t, el, holder)
	e.mu.Lock()
	e.sessions[resource] = s
	e.mu.Unlock()
	return el.Rev()
}

// Lapse does what the expiry of the leader's session lease does, without
// waiting for its TTL: the leader stops keeping it alive and the lease is
// revoked, deleting the leader's key.
func (e *election) Lapse(t *testing.T, resource string) {
	t.Helper()
	e.mu.Lock()
	s := e.sessions[resource]
	e.mu.Unlock()
	if s == nil {
		t.Fatalf("Lapse(%q): no leader campaigned", resource)
	}
	s.Orphan()
	if _, err := e.cli.Revoke(sourcetest.Context(t, 10*time.Second), s.Lease()); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
}

// backend reads and campaigns in elections of c.
func backend(t *testing.T, c *testetcd.Cluster) *sourcetest.Backend {
	return &sourcetest.Backend{
		Open: func(ctx context.Context) (source.Source, error) {
			return etcdsource.Open(ctx, etcdsource.Options{Endpoints: c.Endpoints()})
		},
		Election: newElection(c.Client(t)),
	}
}
