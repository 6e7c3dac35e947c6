package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fencegw/fencegw/internal/testetcd"
	"github.com/fencegw/fencegw/internal/testpg"
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

	var mu sync.Mutex
	var got []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		got = append(got, r.Header.Get("Fencing-Epoch"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer up.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gw.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
store: %q
routes:
  - prefix: "/email/"
    upstream: %q
    tokens: raw
    resource: "invoice-sweeper"
    epoch_source:
      kind: postgres
      dsn: %q
`, filepath.Join(dir, "s.db"), up.URL, dsn)), 0o600)
	gw := start(t, "--config", cfg)
	write := func(epoch string) int { return post(t, gw.proxy+"/email/send", epoch, "") }

	if s := write("1"); s != http.StatusPreconditionFailed {
		t.Fatalf("before any leader, epoch 1 = %d, want 412", s)
	}
	if e := acquire("node-a"); e != "1" {
		t.Fatalf("node-a acquired epoch %q", e)
	}
	if s := write("1"); s != http.StatusNoContent {
		t.Fatalf("node-a's epoch 1 = %d", s)
	}
	if s := write("2"); s != http.StatusForbidden {
		t.Fatalf("epoch 2, never issued by the table = %d, want 403", s)
	}
	if e := acquire("node-b"); e != "" {
		t.Fatalf("node-b acquired %q while node-a held the lease", e)
	}
	psql(t, dsn, `UPDATE leader_lease SET expires_at = now() - interval '1 second'`)
	if s := write("1"); s != http.StatusPreconditionFailed {
		t.Fatalf("node-a's epoch 1 after its lease lapsed = %d, want 412", s)
	}
	if e := acquire("node-b"); e != "2" {
		t.Fatalf("node-b took over at epoch %q", e)
	}
	if s := write("1"); s != http.StatusPreconditionFailed {
		t.Fatalf("node-a's epoch 1 after the takeover = %d, want 412", s)
	}
	if s := write("2"); s != http.StatusNoContent {
		t.Fatalf("node-b's epoch 2 = %d", s)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, ",") != "1,2" {
		t.Fatalf("upstream received epochs %v, want [1 2]", got)
	}
}

// TestBringYourOwnEtcdElection fences writes of leaders elected with etcd's
// own concurrency.Election: the epoch is the leader key's create revision.
func TestBringYourOwnEtcdElection(t *testing.T) {
	c := testetcd.Start(t, 1)
	var mu sync.Mutex
	var got []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		got = append(got, r.Header.Get("Fencing-Epoch"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer up.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gw.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
store: %q
routes:
  - prefix: "/jobs/"
    upstream: %q
    tokens: raw
    resource: "report-generator"
    epoch_source:
      kind: etcd
      endpoints: [%q]
      prefix: "/election/report-generator"
`, filepath.Join(dir, "s.db"), up.URL, c.Endpoints()[0])), 0o600)
	gw := start(t, "--config", cfg)
	write := func(epoch int64) int { return post(t, gw.proxy+"/jobs/run", strconv.FormatInt(epoch, 10), "") }

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
	if s := write(epochA); s != http.StatusNoContent {
		t.Fatalf("node-a's epoch %d = %d", epochA, s)
	}
	if s := write(epochA + 1); s != http.StatusForbidden {
		t.Fatalf("an epoch above the leader's = %d, want 403", s)
	}
	// node-a's session ends (as when its process dies); node-b wins.
	sa.Close()
	_, eb := campaign("node-b")
	epochB := eb.Rev()
	if epochB <= epochA {
		t.Fatalf("node-b's epoch %d is not above node-a's %d", epochB, epochA)
	}
	if s := write(epochA); s != http.StatusPreconditionFailed {
		t.Fatalf("node-a's epoch after the takeover = %d, want 412", s)
	}
	if s := write(epochB); s != http.StatusNoContent {
		t.Fatalf("node-b's epoch = %d", s)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{strconv.FormatInt(epochA, 10), strconv.FormatInt(epochB, 10)}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("upstream received epochs %v, want %v", got, want)
	}
}
