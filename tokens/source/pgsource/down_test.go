package pgsource_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegw/fencegw/internal/testpg"
	"github.com/fencegw/fencegw/tokens/source"
	"github.com/fencegw/fencegw/tokens/source/pgsource"
)

// TestServerDown: with the server stopped, Current fails within its
// context (the caller fails closed), and the same Source recovers once the
// server is back.
func TestServerDown(t *testing.T) {
	cl := testpg.Require(t)
	dsn := cl.NewDatabase(t)
	lease := client(t, dsn)
	exec(t, lease, seedDDL)
	acquire(t, lease, "invoice-sweeper", "node-a", 60)
	s := open(t, pgsource.Options{DSN: dsn})
	mustCheck(t, s, "invoice-sweeper", 1, admit)

	if err := cl.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for i := range 2 {
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		start := time.Now()
		l, err := s.Current(c, "invoice-sweeper")
		cancel()
		if err == nil {
			t.Fatalf("Current #%d with the server down = %+v, want an error", i+1, l)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("Current #%d took %v with a 2s context", i+1, took)
		}
		t.Logf("Current #%d while down: %v", i+1, err)
	}
	if _, err := pgsource.Open(ctx(t, 2*time.Second), pgsource.Options{DSN: dsn}); err == nil {
		t.Fatal("Open with the server down succeeded")
	}

	if err := cl.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	// A pooled connection the restart broke may fail one more call.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.Current(ctx(t, 5*time.Second), "invoice-sweeper")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Current after Restart: %v", err)
		}
		t.Logf("Current just after Restart: %v", err)
		time.Sleep(100 * time.Millisecond)
	}
	mustLeader(t, s, "invoice-sweeper", source.Leader{Epoch: 1, Holder: "node-a", Live: true})
}

// TestStandbyRefused restarts the server as a hot standby: the source must
// refuse to read from it and work again once it is promoted. (That every
// target_session_attrs setting is refused on a standby is
// internal/pgprimary's test.)
func TestStandbyRefused(t *testing.T) {
	cl := testpg.Require(t)
	dsn := cl.NewDatabase(t)
	conn := client(t, dsn)
	exec(t, conn, seedDDL)
	acquire(t, conn, "invoice-sweeper", "node-a", 3600)
	conn.Close(context.Background())
	s := open(t, pgsource.Options{DSN: dsn})
	mustCheck(t, s, "invoice-sweeper", 1, admit)

	if err := cl.RestartAsStandby(); err != nil {
		t.Fatalf("RestartAsStandby: %v", err)
	}
	// The first call may fail on a pooled connection the restart broke; the
	// next must be refused by the primary check.
	for i := range 2 {
		_, err := s.Current(ctx(t, 10*time.Second), "invoice-sweeper")
		if err == nil {
			t.Fatalf("Current #%d on a standby succeeded", i+1)
		}
		if i == 1 && !errors.Is(err, pgconn.ErrStandbyConnection) {
			t.Fatalf("Current on a standby = %v, want it to wrap pgconn.ErrStandbyConnection", err)
		}
	}
	if s, err := pgsource.Open(ctx(t, 10*time.Second), pgsource.Options{DSN: dsn}); err == nil {
		s.Close()
		t.Error("Open on a standby succeeded")
	} else if !errors.Is(err, pgconn.ErrStandbyConnection) {
		t.Errorf("Open on a standby = %v, want pgconn.ErrStandbyConnection", err)
	}

	if err := cl.Promote(); err != nil {
		t.Fatalf("Promote: %v", err)
	}
	mustLeader(t, s, "invoice-sweeper", source.Leader{Epoch: 1, Holder: "node-a", Live: true})
}
