package main

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencegw/fencegw/internal/testutil/testzk"
)

// TestBringYourOwnZooKeeperElection fences writes of leaders elected with
// ZooKeeper's recipe (Curator's LeaderLatch: ephemeral sequential children,
// lowest sequence leads): the epoch is the leader node's czxid. While the
// ensemble is down, writes fail closed with 503 and Retry-After and reach
// nobody; once it is back, the leader's writes pass again.
func TestBringYourOwnZooKeeperElection(t *testing.T) {
	srv := testzk.Start(t)
	const election = "/election/report-generator"
	gw, up := startWithEpochSource(t, "/jobs/", "report-generator",
		`{kind: zookeeper, servers: ["`+srv.Addr()+`"], path: "`+election+`"}`)
	send := gw.proxy + "/jobs/run"

	join := func(holder string) (*zk.Conn, int64) {
		c := srv.Conn(t, 30*time.Second)
		for _, p := range []string{"/election", election} {
			if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				t.Fatalf("Create %s: %v", p, err)
			}
		}
		p, err := c.CreateProtectedEphemeralSequential(election+"/latch-", []byte(holder), zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		_, stat, err := c.Exists(p) // how the leader learns its epoch
		if err != nil {
			t.Fatal(err)
		}
		return c, stat.Czxid
	}

	expectWrite(t, send, 1, http.StatusPreconditionFailed, "before any leader")
	ca, epochA := join("node-a")
	expectWrite(t, send, epochA, http.StatusNoContent, "node-a's")
	expectWrite(t, send, epochA+1, http.StatusForbidden, "above the leader's")
	_, epochB := join("node-b") // queued behind node-a
	expectWrite(t, send, epochB, http.StatusForbidden, "node-b's, while node-a leads")
	ca.Close() // node-a's session ends (as when its process dies); node-b leads
	expectWrite(t, send, epochA, http.StatusPreconditionFailed, "node-a's, after the takeover")
	expectWrite(t, send, epochB, http.StatusNoContent, "node-b's")

	srv.Stop()
	req, _ := http.NewRequest("POST", send, strings.NewReader("x"))
	req.Header.Set("Fencing-Token", strconv.FormatInt(epochB, 10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("node-b's write with the ensemble down = %d (Retry-After %q), want 503 with Retry-After",
			resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	srv.Restart()
	deadline := time.Now().Add(30 * time.Second)
	for post(t, send, strconv.FormatInt(epochB, 10), "") != http.StatusNoContent {
		if time.Now().After(deadline) {
			t.Fatal("node-b's writes still refused 30 s after the ensemble came back")
		}
		time.Sleep(200 * time.Millisecond)
	}
	want := []string{strconv.FormatInt(epochA, 10), strconv.FormatInt(epochB, 10), strconv.FormatInt(epochB, 10)}
	if got := up.values("Fencing-Epoch"); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("upstream received epochs %v, want %v", got, want)
	}
}
