package testetcd_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func mustGet(t *testing.T, c *testetcd.Cluster, key, want string) {
	t.Helper()
	resp, err := c.Client(t).Get(ctx(t), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != want {
		t.Fatalf("Get(%q) = %v, want %q", key, resp.Kvs, want)
	}
}

func TestSingleMemberRestart(t *testing.T) {
	c := testetcd.Start(t, 1)
	eps := c.Endpoints()
	if len(eps) != 1 || !strings.HasPrefix(eps[0], "127.0.0.1:") {
		t.Fatalf("Endpoints() = %q, want one 127.0.0.1:PORT", eps)
	}
	if _, err := c.Client(t).Put(ctx(t), "k", "v1"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	c.Restart()
	mustGet(t, c, "k", "v1")
	c.StopMember(0)
	c.StopMember(0) // no-op
	c.RestartMember(0)
	mustGet(t, c, "k", "v1")
	if got := c.Endpoints(); got[0] != eps[0] {
		t.Fatalf("endpoint moved from %s to %s", eps[0], got[0])
	}
}

func TestThreeMembers(t *testing.T) {
	c := testetcd.Start(t, 3)
	if n := len(c.Endpoints()); n != 3 {
		t.Fatalf("%d endpoints, want 3", n)
	}
	cli := c.Client(t)
	if _, err := cli.Put(ctx(t), "k", "v1"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	c.StopMember(0)
	if _, err := cli.Put(ctx(t), "k", "v2"); err != nil {
		t.Fatalf("Put with one member down: %v", err)
	}
	c.RestartMember(0)
	c.Restart()
	mustGet(t, c, "k", "v2")
}

func TestLeader(t *testing.T) {
	c := testetcd.Start(t, 3)
	first := c.Leader()
	if first < 0 || first > 2 {
		t.Fatalf("Leader() = %d on a healthy cluster", first)
	}
	// The leader's own view agrees: its status names itself.
	st, err := c.Client(t).Status(ctx(t), c.Endpoints()[first])
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	if st.Leader != st.Header.MemberId {
		t.Fatalf("member %d reports leader %x, itself %x", first, st.Leader, st.Header.MemberId)
	}

	c.StopMember(first)
	second := c.Leader()
	if second < 0 || second == first {
		t.Fatalf("Leader() = %d after stopping leader %d", second, first)
	}
	c.StopMember(second)
	start := time.Now()
	if l := c.Leader(); l != -1 {
		t.Fatalf("Leader() = %d with one member of three running", l)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Leader() without quorum took %v", d)
	}

	c.RestartMember(first)
	if l := c.Leader(); l < 0 || l == second {
		t.Fatalf("Leader() = %d after restoring a quorum without member %d", l, second)
	}
}
