package testpg

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/testutil/testproc"
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

func TestKill(t *testing.T) {
	c := Require(t)
	// With synchronous_commit on, an acknowledged commit is in the WAL the
	// server has written, and so survives a crash.
	dsn := c.NewDatabase(t) + "&synchronous_commit=on"
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	_, err = conn.Exec(ctx, "CREATE TABLE t AS SELECT 0::bigint AS v")
	conn.Close(ctx)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	dataDir, err := filepath.EvalSymlinks(c.srv.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i <= 3; i++ {
		idle, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if v, err := exec1(ctx, dsn, "INSERT INTO t VALUES (1) RETURNING (SELECT count(*) + 1 FROM t)"); err != nil || v != i+1 {
			t.Fatalf("insert = %d, %v; want row %d", v, err, i+1)
		}
		if len(processesIn(dataDir)) < 2 {
			t.Fatalf("found %v processes of the server, want the postmaster and its children", processesIn(dataDir))
		}
		offset := testproc.LogSize(c.srv.logPath)

		if err := c.Kill(); err != nil {
			t.Fatalf("Kill: %v", err)
		}
		if pids := processesIn(dataDir); len(pids) > 0 {
			t.Fatalf("processes %v of the server outlived Kill", pids)
		}
		if err := c.Kill(); err != nil {
			t.Fatalf("second Kill: %v", err)
		}
		err = idle.Ping(ctx)
		idle.Close(ctx)
		if err == nil {
			t.Fatal("a connection survived Kill")
		}
		short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
		_, err = exec1(short, dsn, "SELECT 1")
		cancelShort()
		if err == nil || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("query on a killed server = %v, want connection refused", err)
		}

		start := time.Now()
		if err := c.Restart(); err != nil {
			t.Fatalf("Restart after Kill: %v", err)
		}
		t.Logf("recovered in %v", time.Since(start).Round(time.Millisecond))
		if v, err := exec1(ctx, dsn, "SELECT count(*) FROM t"); err != nil || v != i+1 {
			t.Fatalf("after Kill and Restart: %d rows, %v; want %d", v, err, i+1)
		}
		if log := tail(c.srv.logPath); testproc.LogSize(c.srv.logPath) <= offset || !strings.Contains(log, "not properly shut down") {
			t.Fatalf("no crash recovery in the log:\n%s", log)
		}
	}
}

func TestTerminateBackends(t *testing.T) {
	c := Shared(t)
	dsn, other := c.NewDatabase(t), c.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var conns []*pgx.Conn
	for _, d := range []string{dsn, dsn, other} {
		conn, err := pgx.Connect(ctx, d)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer conn.Close(context.Background())
		conns = append(conns, conn)
	}
	if n := c.TerminateBackends(t, dsn); n != 2 {
		t.Fatalf("TerminateBackends = %d, want the 2 sessions on the database", n)
	}
	for _, conn := range conns[:2] {
		if err := conn.Ping(ctx); err == nil {
			t.Fatal("a terminated session still answers")
		}
	}
	if err := conns[2].Ping(ctx); err != nil {
		t.Fatalf("a session on another database was ended: %v", err)
	}
	u, err := pgx.ParseConfig(other)
	if err != nil {
		t.Fatal(err)
	}
	if n := c.TerminateBackends(t, u.Database); n != 1 {
		t.Fatalf("TerminateBackends by name = %d, want 1", n)
	}
	if n := c.TerminateBackends(t, dsn); n != 0 {
		t.Fatalf("TerminateBackends of an idle database = %d, want 0", n)
	}
}
