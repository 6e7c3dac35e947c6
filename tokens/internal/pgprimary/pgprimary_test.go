package pgprimary_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegw/fencegw/internal/testutil/testleak"
	"github.com/fencegw/fencegw/internal/testutil/testpg"
	"github.com/fencegw/fencegw/tokens/internal/pgprimary"
)

func TestMain(m *testing.M) { testleak.Exit(m.Run(), 5*time.Second) }

// connect connects to dsn with target_session_attrs=tsa (none when empty)
// and the primary check.
func connect(t *testing.T, dsn, tsa string) error {
	t.Helper()
	if tsa != "" {
		dsn += "&target_session_attrs=" + tsa
	}
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	pgprimary.Require(cc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return err
	}
	var recovering bool
	err = conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovering)
	conn.Close(context.Background())
	if err != nil {
		t.Fatalf("pg_is_in_recovery: %v", err)
	}
	if recovering {
		t.Fatalf("target_session_attrs=%q: connected to a server in recovery", tsa)
	}
	return nil
}

// TestRequire: every target_session_attrs setting that accepts a primary
// connects to one; on a hot standby, every setting is refused with
// pgconn.ErrStandbyConnection (read-write by its own check first).
func TestRequire(t *testing.T) {
	cl := testpg.Require(t)
	dsn := cl.NewDatabase(t)
	for _, tsa := range []string{"", "any", "primary", "read-write", "prefer-standby"} {
		if err := connect(t, dsn, tsa); err != nil {
			t.Errorf("target_session_attrs=%q on a primary: %v", tsa, err)
		}
	}
	for _, tsa := range []string{"standby", "read-only"} {
		if err := connect(t, dsn, tsa); err == nil {
			t.Errorf("target_session_attrs=%q on a primary connected", tsa)
		}
	}

	if err := cl.RestartAsStandby(); err != nil {
		t.Fatalf("RestartAsStandby: %v", err)
	}
	for _, tsa := range []string{"", "any", "read-only", "standby", "prefer-standby", "read-write", "primary"} {
		err := connect(t, dsn, tsa)
		if err == nil {
			t.Errorf("target_session_attrs=%q on a standby connected", tsa)
			continue
		}
		if tsa != "read-write" && !errors.Is(err, pgconn.ErrStandbyConnection) {
			t.Errorf("target_session_attrs=%q on a standby = %v, want pgconn.ErrStandbyConnection", tsa, err)
		}
	}

	if err := cl.Promote(); err != nil {
		t.Fatalf("Promote: %v", err)
	}
	if err := connect(t, dsn, ""); err != nil {
		t.Fatalf("after Promote: %v", err)
	}
}
