package pgsource_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/testutil/testpg"
	"github.com/fencegw/fencegw/tokens/source"
	"github.com/fencegw/fencegw/tokens/source/pgsource"
	"github.com/fencegw/fencegw/tokens/source/sourcetest"
)

// The seed article's table and statements, verbatim.
const (
	seedDDL = `CREATE TABLE leader_lease (
  name        text PRIMARY KEY,
  holder      text,
  epoch       bigint NOT NULL DEFAULT 0,          -- the fencing token
  expires_at  timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO leader_lease (name) VALUES ('invoice-sweeper');`

	seedAcquire = "UPDATE leader_lease SET holder = $2, epoch = epoch + 1, " +
		"expires_at = now() + make_interval(secs => $3) " +
		"WHERE name = $1 AND (holder IS NULL OR holder = $2 OR expires_at < now()) " +
		"RETURNING epoch"

	seedRenew = "UPDATE leader_lease SET expires_at = now() + make_interval(secs => $3) " +
		"WHERE name = $1 AND holder = $2 AND epoch = $4 AND expires_at > now() " +
		"RETURNING epoch"
)

// client is an independent lease client: a plain pgx connection, as the
// team's own service would hold.
func client(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(sourcetest.Context(t, 30*time.Second), dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// database creates a database on the shared cluster and returns its DSN
// and a lease client connected to it.
func database(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	dsn := testpg.Shared(t).NewDatabase(t)
	return dsn, client(t, dsn)
}

// seeded creates a database on the shared cluster holding the seed's table
// and returns a lease client connected to it and a source reading it.
func seeded(t *testing.T) (*pgx.Conn, *pgsource.Source) {
	t.Helper()
	dsn, lease := database(t)
	exec(t, lease, seedDDL)
	return lease, open(t, pgsource.Options{DSN: dsn})
}

func exec(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(sourcetest.Context(t, 30*time.Second), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// acquire runs the seed's ACQUIRE and returns the epoch, or 0 when the
// lease is held by another.
func acquire(t *testing.T, conn *pgx.Conn, name, holder string, secs int) int64 {
	t.Helper()
	var epoch int64
	err := conn.QueryRow(sourcetest.Context(t, 30*time.Second), seedAcquire, name, holder, secs).Scan(&epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0
	}
	if err != nil {
		t.Fatalf("ACQUIRE %s by %s: %v", name, holder, err)
	}
	return epoch
}

// renew runs the seed's RENEW and reports whether it matched.
func renew(t *testing.T, conn *pgx.Conn, name, holder string, secs int, epoch int64) bool {
	t.Helper()
	var got int64
	err := conn.QueryRow(sourcetest.Context(t, 30*time.Second), seedRenew, name, holder, secs, epoch).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return false
	}
	if err != nil {
		t.Fatalf("RENEW %s by %s at %d: %v", name, holder, epoch, err)
	}
	if got != epoch {
		t.Fatalf("RENEW returned epoch %d, want %d", got, epoch)
	}
	return true
}

func open(t *testing.T, o pgsource.Options) *pgsource.Source {
	t.Helper()
	s, err := pgsource.Open(sourcetest.Context(t, 30*time.Second), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// election drives the seed's lease table with its own statements, from
// independent connections, as the team's own service would.
type election struct{ dsn string }

// Acquire runs the seed's ACQUIRE for 60 s, adding the lease's row first
// when it has none.
func (e election) Acquire(t *testing.T, resource, holder string) int64 {
	t.Helper()
	conn := client(t, e.dsn)
	exec(t, conn, "INSERT INTO leader_lease (name) VALUES ($1) ON CONFLICT (name) DO NOTHING", resource)
	epoch := acquire(t, conn, resource, holder, 60)
	if epoch == 0 {
		t.Fatalf("ACQUIRE %s by %s: the lease is held", resource, holder)
	}
	return epoch
}

// Lapse moves the lease's deadline into the past on the database's clock.
func (e election) Lapse(t *testing.T, resource string) {
	t.Helper()
	exec(t, client(t, e.dsn), "UPDATE leader_lease SET expires_at = now() - interval '1 second' WHERE name = $1", resource)
}

// backend is a new database of cl holding the seed's table, and the
// sources and election over it.
func backend(t *testing.T, cl *testpg.Cluster) *sourcetest.Backend {
	t.Helper()
	dsn := cl.NewDatabase(t)
	exec(t, client(t, dsn), seedDDL)
	return &sourcetest.Backend{
		Open: func(ctx context.Context) (source.Source, error) {
			return pgsource.Open(ctx, pgsource.Options{DSN: dsn})
		},
		Election: election{dsn},
	}
}
