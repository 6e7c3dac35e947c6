package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/internal/testutil/testpg"
)

// psql runs SQL with the PostgreSQL command-line client, standing in for an
// application that keeps its own lease table (the seed article's).
func psql(t *testing.T, dsn, sql string) string {
	t.Helper()
	out, err := exec.Command("psql", dsn, "-v", "ON_ERROR_STOP=1", "-qtAc", sql).CombinedOutput()
	if err != nil {
		t.Fatalf("psql %q: %v\n%s", sql, err, out)
	}
	return strings.TrimSpace(string(out))
}

// startWithEpochSource starts a gateway over a fresh embedded store whose
// one route, prefix, takes raw epochs for resource as far as the epoch
// source (YAML, such as {kind: etcd, …}) vouches for them, in front of an
// upstream answering 204.
func startWithEpochSource(t *testing.T, prefix, resource, source string) (*proc, *recorder) {
	t.Helper()
	up := newRecorder(t, http.StatusNoContent)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "gw.yaml", []byte(fmt.Sprintf(`
store: %q
routes:
  - prefix: %q
    upstream: %q
    tokens: raw
    resource: %q
    epoch_source: %s
`, filepath.Join(dir, "s.db"), prefix, up.srv.URL, resource, source)))
	return start(t, "--config", cfg), up
}

// expectWrite sends a write at a raw epoch to url and fails t unless it is
// answered want; whose says whose epoch it is, or when it is sent.
func expectWrite(t *testing.T, url string, epoch int64, want int, whose string) {
	t.Helper()
	if s := post(t, url, strconv.FormatInt(epoch, 10), ""); s != want {
		t.Fatalf("epoch %d, %s = %d, want %d", epoch, whose, s, want)
	}
}

// TestBringYourOwnPostgresLease fences writes of leaders elected by their
// own PostgreSQL lease table, driven by psql with the seed's statements,
// through a raw route whose epoch source is that table.
func TestBringYourOwnPostgresLease(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("psql is required")
		}
		t.Skip("psql not installed")
	}
	dsn := testpg.Shared(t).NewDatabase(t)
	psql(t, dsn, `CREATE TABLE leader_lease (
  name        text PRIMARY KEY,
  holder      text,
  epoch       bigint NOT NULL DEFAULT 0,
  expires_at  timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO leader_lease (name) VALUES ('invoice-sweeper');`)
	acquire := func(holder string) string {
		return psql(t, dsn, fmt.Sprintf(`UPDATE leader_lease SET holder = '%s', epoch = epoch + 1,
  expires_at = now() + make_interval(secs => 15)
  WHERE name = 'invoice-sweeper' AND (holder IS NULL OR holder = '%s' OR expires_at < now())
  RETURNING epoch`, holder, holder))
	}

	gw, up := startWithEpochSource(t, "/email/", "invoice-sweeper", fmt.Sprintf("{kind: postgres, dsn: %q}", dsn))
	send := gw.proxy + "/email/send"

	expectWrite(t, send, 1, http.StatusPreconditionFailed, "before any leader")
	if e := acquire("node-a"); e != "1" {
		t.Fatalf("node-a acquired epoch %q", e)
	}
	expectWrite(t, send, 1, http.StatusNoContent, "node-a's")
	expectWrite(t, send, 2, http.StatusForbidden, "never issued by the table")
	if e := acquire("node-b"); e != "" {
		t.Fatalf("node-b acquired %q while node-a held the lease", e)
	}
	psql(t, dsn, `UPDATE leader_lease SET expires_at = now() - interval '1 second'`)
	expectWrite(t, send, 1, http.StatusPreconditionFailed, "node-a's, after its lease lapsed")
	if e := acquire("node-b"); e != "2" {
		t.Fatalf("node-b took over at epoch %q", e)
	}
	expectWrite(t, send, 1, http.StatusPreconditionFailed, "node-a's, after the takeover")
	expectWrite(t, send, 2, http.StatusNoContent, "node-b's")
	if got := up.values("Fencing-Epoch"); strings.Join(got, ",") != "1,2" {
		t.Fatalf("upstream received epochs %v, want [1 2]", got)
	}
}

// TestBringYourOwnEtcdElection fences writes of leaders elected with etcd's
// own concurrency.Election: the epoch is the leader key's create revision.
func TestBringYourOwnEtcdElection(t *testing.T) {
	c := testetcd.Start(t, 1)
	gw, up := startWithEpochSource(t, "/jobs/", "report-generator",
		fmt.Sprintf(`{kind: etcd, endpoints: [%q], prefix: "/election/report-generator"}`, c.Endpoints()[0]))
	send := gw.proxy + "/jobs/run"

	campaign := func(holder string) (*concurrency.Session, *concurrency.Election) {
		s, err := concurrency.NewSession(c.Client(t), concurrency.WithTTL(5))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		e := concurrency.NewElection(s, "/election/report-generator")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := e.Campaign(ctx, holder); err != nil {
			t.Fatal(err)
		}
		return s, e
	}
	sa, ea := campaign("node-a")
	epochA := ea.Rev()
	expectWrite(t, send, epochA, http.StatusNoContent, "node-a's")
	expectWrite(t, send, epochA+1, http.StatusForbidden, "above the leader's")
	// node-a's session ends (as when its process dies); node-b wins.
	sa.Close()
	_, eb := campaign("node-b")
	epochB := eb.Rev()
	if epochB <= epochA {
		t.Fatalf("node-b's epoch %d is not above node-a's %d", epochB, epochA)
	}
	expectWrite(t, send, epochA, http.StatusPreconditionFailed, "node-a's, after the takeover")
	expectWrite(t, send, epochB, http.StatusNoContent, "node-b's")
	got := up.values("Fencing-Epoch")
	if want := []string{strconv.FormatInt(epochA, 10), strconv.FormatInt(epochB, 10)}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("upstream received epochs %v, want %v", got, want)
	}
}
