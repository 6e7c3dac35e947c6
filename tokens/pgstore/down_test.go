package pgstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegw/fencegw/internal/testpg"
	"github.com/fencegw/fencegw/tokens/pgstore"
)

// TestStoreDown stops the server under an open store: every operation fails
// as unavailable within its context, and the same store recovers once the
// server is back.
func TestStoreDown(t *testing.T) {
	cl := testpg.Require(t)
	dsn := cl.NewDatabase(t)
	s := open(t, dsn)
	mustAdvance(t, s, "r", 5)

	if err := cl.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, op := range []struct {
		name string
		fn   func(context.Context) error
	}{
		{"Advance", func(c context.Context) error { _, err := s.Advance(c, "r", 6); return err }},
		{"Current", func(c context.Context) error { _, err := s.Current(c, "r"); return err }},
		{"Ping", s.Ping},
	} {
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		start := time.Now()
		err := op.fn(c)
		cancel()
		mustBeUnavailable(t, op.name+" while down", err)
		t.Logf("%s while down failed after %v: %v", op.name, time.Since(start).Round(time.Millisecond), err)
	}

	if err := cl.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	mustCurrent(t, s, "r", 5)
	mustAdvance(t, s, "r", 6)
	if err := s.Ping(ctx(t, 30*time.Second)); err != nil {
		t.Fatalf("Ping after restart: %v", err)
	}
}

// TestBrokenPooledConnectionsRetried terminates every session of the
// store's database while its pool sits idle: the next read and the next
// advance each succeed, on a fresh connection, instead of failing on the
// broken one they were handed.
func TestBrokenPooledConnectionsRetried(t *testing.T) {
	cl := testpg.Shared(t)
	dsn := cl.NewDatabase(t)
	s := open(t, dsn)
	mustAdvance(t, s, "r", 5)
	for _, op := range []struct {
		name string
		fn   func()
	}{
		{"Current", func() { mustCurrent(t, s, "r", 5) }},
		{"Advance", func() { mustAdvance(t, s, "r", 5) }},
		{"Advance higher", func() { mustAdvance(t, s, "r", 6) }},
	} {
		// Waits (up to 5 s each) until the backends have exited; the pool's
		// connections were idle for far less than the second after which
		// pgxpool pings them on acquire.
		killed := queryInt(t, dsn, `SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()`)
		if killed == 0 {
			t.Fatalf("%s: no session of the store to terminate", op.name)
		}
		op.fn()
	}
}

// TestStandbyRefused restarts the server as a hot standby, which accepts
// read-only connections: the store must refuse to read from it, whatever
// target_session_attrs says, and must work again once it is promoted.
func TestStandbyRefused(t *testing.T) {
	cl := testpg.Require(t)
	dsn := cl.NewDatabase(t)
	s := open(t, dsn)
	mustAdvance(t, s, "r", 5)

	var dataDir string
	func() {
		conn, err := pgx.Connect(ctx(t, 30*time.Second), dsn)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer conn.Close(context.Background())
		if err := conn.QueryRow(ctx(t, 30*time.Second), "SHOW data_directory").Scan(&dataDir); err != nil {
			t.Fatalf("SHOW data_directory: %v", err)
		}
		// A checkpoint logs the running transactions, which a hot standby
		// needs before it accepts connections.
		if _, err := conn.Exec(ctx(t, 30*time.Second), "CHECKPOINT"); err != nil {
			t.Fatalf("CHECKPOINT: %v", err)
		}
	}()
	if err := os.WriteFile(filepath.Join(dataDir, "standby.signal"), nil, 0o644); err != nil {
		t.Fatalf("write standby.signal: %v", err)
	}
	if err := cl.Restart(); err != nil {
		t.Fatalf("Restart as standby: %v", err)
	}
	if got := queryInt(t, dsn, "SELECT pg_is_in_recovery()::int"); got != 1 {
		t.Fatalf("pg_is_in_recovery() = %d after restart with standby.signal", got)
	}

	c := ctx(t, 10*time.Second)
	// The first call may fail on a pooled connection the restart broke; the
	// next must be refused by the primary check.
	for i := range 2 {
		_, err := s.Current(c, "r")
		mustBeUnavailable(t, "Current on standby", err)
		t.Logf("Current on standby #%d: %v", i+1, err)
		if i == 1 && !errors.Is(err, pgconn.ErrStandbyConnection) {
			t.Fatalf("Current on standby = %v, want it to wrap pgconn.ErrStandbyConnection", err)
		}
	}
	_, err := s.Advance(c, "r", 6)
	mustBeUnavailable(t, "Advance on standby", err)
	mustBeUnavailable(t, "Ping on standby", s.Ping(c))
	for _, tsa := range []string{"", "any", "read-only", "standby", "prefer-standby", "read-write", "primary"} {
		d := dsn
		if tsa != "" {
			d += "&target_session_attrs=" + tsa
		}
		s, err := pgstore.Open(ctx(t, 10*time.Second), d)
		if err == nil {
			s.Close()
			t.Errorf("Open on a standby with target_session_attrs=%q succeeded", tsa)
			continue
		}
		// read-write fails its own check first; every other setting gets
		// past it on a standby and is stopped by the store's primary check.
		if tsa != "read-write" && !errors.Is(err, pgconn.ErrStandbyConnection) {
			t.Errorf("Open on a standby with target_session_attrs=%q = %v, want pgconn.ErrStandbyConnection", tsa, err)
		}
	}

	sql(t, dsn, "SELECT pg_promote(true, 60)")
	mustCurrent(t, s, "r", 5)
	mustAdvance(t, s, "r", 6)
}
