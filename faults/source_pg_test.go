package faults

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/internal/testutil/testpg"
)

// The PostgreSQL epoch source in the plan: the seed's leader_lease table in
// a database of its own, on the PostgreSQL server that also holds the
// gateways' store — so the server is neither frozen nor killed here (that
// would cut the store too, which TestFaults covers); the network between
// each replica and the source is. Leaders run the seed's acquire and renew
// statements on connections of their own, and release by expiring their
// row.

// pgLeaseTTL is the leaders' lease.
const pgLeaseTTL = 1500 * time.Millisecond

// The seed's table and statements (tokens/source/pgsource's tests quote
// them too), with the release a leader that ends its term cleanly runs.
const (
	pgLeaseDDL = `CREATE TABLE leader_lease (
  name        text PRIMARY KEY,
  holder      text,
  epoch       bigint NOT NULL DEFAULT 0,
  expires_at  timestamptz NOT NULL DEFAULT '-infinity'
)`
	pgAcquire = "UPDATE leader_lease SET holder = $2, epoch = epoch + 1, " +
		"expires_at = now() + make_interval(secs => $3) " +
		"WHERE name = $1 AND (holder IS NULL OR holder = $2 OR expires_at < now()) RETURNING epoch"
	pgRenew = "UPDATE leader_lease SET expires_at = now() + make_interval(secs => $3) " +
		"WHERE name = $1 AND holder = $2 AND epoch = $4 AND expires_at > now() RETURNING epoch"
	pgRelease = "UPDATE leader_lease SET expires_at = '-infinity' WHERE name = $1 AND epoch = $2"
)

// startPGSource creates the lease table, one row per resource, in a new
// database; the route reads it through the replica's proxy.
func startPGSource(t *testing.T) *sourceEnv {
	dsn := testpg.Require(t).NewDatabase(t)
	pool := pgPool(t, dsn)
	if _, err := pool.Exec(context.Background(), pgLeaseDDL); err != nil {
		t.Fatalf("create the lease table: %v", err)
	}
	for _, r := range sourceResources() {
		if _, err := pool.Exec(context.Background(), "INSERT INTO leader_lease (name) VALUES ($1)", r); err != nil {
			t.Fatalf("insert %s: %v", r, err)
		}
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return &sourceEnv{
		route: sourceRoute{targets: []string{u.Host}, resources: sourceResources(), yaml: func(addrs []string) string {
			via := *u
			via.Host = addrs[0]
			return fmt.Sprintf("{kind: postgres, dsn: %q}", via.String())
		}},
		ttl: pgLeaseTTL,
		elector: func(t *testing.T, holder string) elector {
			return &pgElector{conn: pgPool(t, dsn), holder: holder, ttlLock: ttlLock{ttl: pgLeaseTTL}}
		},
	}
}

// pgPool is a pool of connections of its own to dsn, closed when t ends:
// a connection a timed-out statement broke is replaced.
func pgPool(t *testing.T, dsn string) *pgxpool.Pool {
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// pgElector is a leader running the seed's statements.
type pgElector struct {
	conn   *pgxpool.Pool
	holder string
	ttlLock

	resource string
	epoch    int64
}

// pgCall bounds one statement of a leader.
const pgCall = 500 * time.Millisecond

func (e *pgElector) exec(sql string, args ...any) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), pgCall)
	defer cancel()
	var epoch int64
	err := e.conn.QueryRow(ctx, sql, args...).Scan(&epoch)
	return epoch, err
}

func (e *pgElector) campaign(resource string) (int64, bool) {
	e.resource, e.unsure = resource, false
	epoch, err := e.exec(pgAcquire, resource, e.holder, pgLeaseTTL.Seconds())
	if err != nil {
		return 0, false // no row: another leads (or an outcome unknown: nobody uses that epoch)
	}
	e.epoch, e.set = epoch, time.Now()
	return epoch, true
}

func (e *pgElector) renew() bool {
	_, err := e.exec(pgRenew, e.resource, e.holder, pgLeaseTTL.Seconds(), e.epoch)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false
	case err != nil:
		e.unsure = true
		return false
	}
	e.set = time.Now()
	return true
}

// resign expires the row if it still holds the epoch: once that returned,
// the row no longer holds a live lease at the epoch, and never will (a
// renewal needs it live).
func (e *pgElector) resign() time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), pgCall)
	defer cancel()
	if _, err := e.conn.Exec(ctx, pgRelease, e.resource, e.epoch); err == nil {
		return time.Now()
	}
	return e.expiry()
}

func (e *pgElector) close() {}
