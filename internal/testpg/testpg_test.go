package testpg

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) {
	code := m.Run()
	CloseShared()
	os.Exit(code)
}

func TestDatabaseName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z0-9_]{1,63}$`)
	seen := map[string]bool{}
	for _, n := range []string{"TestX", "TestContract/SurvivesRestart", strings.Repeat("Ü", 200)} {
		name, err := databaseName(n)
		if err != nil {
			t.Fatal(err)
		}
		if !valid.MatchString(name) || seen[name] {
			t.Fatalf("databaseName(%q) = %q", n, name)
		}
		seen[name] = true
	}
}

func exec1(ctx context.Context, dsn, sql string) (int64, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var v int64
	err = conn.QueryRow(ctx, sql).Scan(&v)
	return v, err
}

func TestSharedDatabases(t *testing.T) {
	c := Shared(t)
	a, b := c.NewDatabase(t), c.NewDatabase(t)
	if a == b {
		t.Fatalf("two NewDatabase calls returned %q", a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, dsn := range []string{a, b} {
		if v, err := exec1(ctx, dsn, "SELECT 1"); err != nil || v != 1 {
			t.Fatalf("SELECT 1 on %s = %d, %v", dsn, v, err)
		}
	}
	if Shared(t) != c {
		t.Fatal("Shared returned a second cluster")
	}
}

func TestStopRestart(t *testing.T) {
	start := time.Now()
	c := Require(t)
	t.Logf("owned cluster started in %v", time.Since(start).Round(time.Millisecond))
	if !c.Owned() {
		t.Fatal("Require returned a cluster that is not owned")
	}
	dsn := c.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	_, err = conn.Exec(ctx, "CREATE TABLE t AS SELECT 42::bigint AS v")
	conn.Close(ctx)
	if err != nil {
		t.Fatalf("create: %v", err)
	}

	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	_, err = exec1(short, dsn, "SELECT 1")
	cancelShort()
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("query on a stopped server = %v, want connection refused", err)
	}

	start = time.Now()
	if err := c.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	t.Logf("restarted in %v", time.Since(start).Round(time.Millisecond))
	if v, err := exec1(ctx, dsn, "SELECT v FROM t"); err != nil || v != 42 {
		t.Fatalf("after restart: %d, %v; want 42", v, err)
	}
	if err := c.Restart(); err != nil { // restart of a running server
		t.Fatalf("second Restart: %v", err)
	}

	if err := c.RestartAsStandby(); err != nil {
		t.Fatalf("RestartAsStandby: %v", err)
	}
	if v, err := exec1(ctx, dsn, "SELECT pg_is_in_recovery()::int + v FROM t"); err != nil || v != 43 {
		t.Fatalf("on the standby: %d, %v; want in recovery and 42 kept", v, err)
	}
	if _, err := exec1(ctx, dsn, "INSERT INTO t VALUES (1) RETURNING v"); err == nil {
		t.Fatal("the standby took a write")
	}
	if err := c.Promote(); err != nil {
		t.Fatalf("Promote: %v", err)
	}
	if v, err := exec1(ctx, dsn, "INSERT INTO t VALUES (7) RETURNING v + pg_is_in_recovery()::int"); err != nil || v != 7 {
		t.Fatalf("after Promote: %d, %v; want a write out of recovery", v, err)
	}

	dir := c.srv.dir
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("cluster directory %s still there after Close: %v", dir, err)
	}
	if err := c.Restart(); err == nil {
		t.Fatal("Restart after Close succeeded")
	}
	if err := c.RestartAsStandby(); err == nil {
		t.Fatal("RestartAsStandby after Close succeeded")
	}
}
