package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegw/fencegw/internal/testutil/testpg"
	"github.com/fencegw/fencegw/tokens/pgstore"
)

// ownCluster starts a cluster for t alone and opens a store on a new
// database of it, in which resource "r" is at HWM 5.
func ownCluster(t *testing.T) (*testpg.Cluster, string, *pgstore.Store) {
	t.Helper()
	cl := testpg.Require(t)
	dsn := cl.NewDatabase(t)
	s := open(t, dsn)
	mustAdvance(t, s, "r", 5)
	return cl, dsn, s
}

// TestStoreDown stops the server under an open store: every operation fails
// as unavailable within its context, and the same store recovers once the
// server is back.
func TestStoreDown(t *testing.T) {
	cl, _, s := ownCluster(t)

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
// read-only connections: the store must refuse to read from it and must
// work again once it is promoted. (That every target_session_attrs setting
// is refused on a standby is tokens/internal/pgprimary's test.)
func TestStandbyRefused(t *testing.T) {
	cl, dsn, s := ownCluster(t)

	if err := cl.RestartAsStandby(); err != nil {
		t.Fatalf("RestartAsStandby: %v", err)
	}
	if got := queryInt(t, dsn, "SELECT pg_is_in_recovery()::int"); got != 1 {
		t.Fatalf("pg_is_in_recovery() = %d after RestartAsStandby", got)
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
	if s, err := pgstore.Open(ctx(t, 10*time.Second), dsn); err == nil {
		s.Close()
		t.Error("Open on a standby succeeded")
	} else if !errors.Is(err, pgconn.ErrStandbyConnection) {
		t.Errorf("Open on a standby = %v, want pgconn.ErrStandbyConnection", err)
	}

	if err := cl.Promote(); err != nil {
		t.Fatalf("Promote: %v", err)
	}
	mustCurrent(t, s, "r", 5)
	mustAdvance(t, s, "r", 6)
}
