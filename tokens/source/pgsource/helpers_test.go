package pgsource_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/source"
	"github.com/fencegw/fencegw/tokens/source/pgsource"
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

func ctx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}

// client is an independent lease client: a plain pgx connection, as the
// team's own service would hold.
func client(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx(t, 30*time.Second), dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func exec(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(ctx(t, 30*time.Second), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// acquire runs the seed's ACQUIRE and returns the epoch, or 0 when the
// lease is held by another.
func acquire(t *testing.T, conn *pgx.Conn, name, holder string, secs int) int64 {
	t.Helper()
	var epoch int64
	err := conn.QueryRow(ctx(t, 30*time.Second), seedAcquire, name, holder, secs).Scan(&epoch)
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
	err := conn.QueryRow(ctx(t, 30*time.Second), seedRenew, name, holder, secs, epoch).Scan(&got)
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
	s, err := pgsource.Open(ctx(t, 30*time.Second), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func current(t *testing.T, s source.Source, resource string) source.Leader {
	t.Helper()
	l, err := s.Current(ctx(t, 10*time.Second), resource)
	if err != nil {
		t.Fatalf("Current(%q): %v", resource, err)
	}
	return l
}

func mustLeader(t *testing.T, s source.Source, resource string, want source.Leader) {
	t.Helper()
	if got := current(t, s, resource); got != want {
		t.Fatalf("Current(%q) = %+v, want %+v", resource, got, want)
	}
}

// mustCheck reads the leader and checks presented against it: want is
// admit, ahead, superseded or a source reason.
func mustCheck(t *testing.T, s source.Source, resource string, presented int64, want string) {
	t.Helper()
	err := source.Check(current(t, s, resource), resource, presented)
	var stale *tokens.StaleEpochError
	var ah *tokens.EpochNotIssuedError
	switch {
	case want == admit && err == nil:
	case want == ahead && errors.As(err, &ah):
	case want == superseded && errors.As(err, &stale) && stale.Reason == "":
	case errors.As(err, &stale) && stale.Reason != "" && stale.Reason == want:
	default:
		t.Fatalf("Check(%s, %d) = %v, want %q", resource, presented, err, want)
	}
}

const (
	admit      = ""
	ahead      = "ahead"
	superseded = "superseded"
	lapsed     = source.ReasonLapsed
	noLeader   = source.ReasonNoLeader
)
