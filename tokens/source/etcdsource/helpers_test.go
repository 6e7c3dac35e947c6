package etcdsource_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/source"
)

func ctx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}

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
	if err := e.Campaign(ctx(t, 10*time.Second), val); err != nil {
		t.Fatalf("Campaign(%q): %v", val, err)
	}
}

// campaignAsync starts a campaign that blocks until it wins; the returned
// channel delivers its result.
func campaignAsync(t *testing.T, e *concurrency.Election, val string) <-chan error {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	done := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		defer cancel()
		done <- e.Campaign(c, val)
	}()
	t.Cleanup(func() {
		cancel()
		<-exited
	})
	return done
}

// keys returns the create revisions of the campaign keys under prefix+"/",
// oldest first.
func keys(t *testing.T, cli *clientv3.Client, prefix string) []int64 {
	t.Helper()
	resp, err := cli.Get(ctx(t, 10*time.Second), prefix+"/", clientv3.WithPrefix(),
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

func recv(t *testing.T, what string, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	return nil
}

func current(t *testing.T, s source.Source, resource string) source.Leader {
	t.Helper()
	l, err := s.Current(ctx(t, 10*time.Second), resource)
	if err != nil {
		t.Fatalf("Current(%q): %v", resource, err)
	}
	return l
}

func mustLeader(t *testing.T, s source.Source, resource string, want source.Leader) {
	t.Helper()
	if got := current(t, s, resource); got != want {
		t.Fatalf("Current(%q) = %+v, want %+v", resource, got, want)
	}
}

// mustCheck reads the leader and checks presented against it: want is
// admit, ahead, superseded or a source reason.
func mustCheck(t *testing.T, s source.Source, resource string, presented int64, want string) {
	t.Helper()
	err := source.Check(current(t, s, resource), resource, presented)
	var stale *tokens.StaleEpochError
	var ah *tokens.EpochNotIssuedError
	switch {
	case want == admit && err == nil:
	case want == ahead && errors.As(err, &ah):
	case want == superseded && errors.As(err, &stale) && stale.Reason == "":
	case errors.As(err, &stale) && stale.Reason != "" && stale.Reason == want:
	default:
		t.Fatalf("Check(%s, %d) = %v, want %q", resource, presented, err, want)
	}
}

const (
	admit      = ""
	ahead      = "ahead"
	superseded = "superseded"
	noLeader   = source.ReasonNoLeader
)
