// Package testpg gives tests a throwaway PostgreSQL server.
//
// By default it starts a private cluster from the Debian server binaries
// (/usr/lib/postgresql/<version>/bin, highest version) in a temporary
// directory, tuned for speed rather than durability (fsync off). When the
// environment variable FENCEGW_TEST_POSTGRES_DSN is set, it uses that server
// instead: the DSN must let it create and drop databases, and such a
// cluster cannot be stopped or restarted by tests.
//
// Tests normally call Shared and then NewDatabase for isolated state; a test
// that stops and restarts the server calls Require for a cluster of its own.
// When no server can be had, Shared and Require skip the test, or fail it if
// the environment variable CI is "true".
package testpg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const envDSN = "FENCEGW_TEST_POSTGRES_DSN"

// errNotOwned is returned by the operations that need a cluster this
// package started.
var errNotOwned = errors.New("testpg: cluster is not owned (it comes from " + envDSN + ")")

// errClosed is returned by operations on a closed cluster.
var errClosed = errors.New("testpg: cluster is closed")

// Cluster is a PostgreSQL server for tests: either one this package started
// (owned) or the external server named by FENCEGW_TEST_POSTGRES_DSN. Its
// methods are safe for concurrent use.
type Cluster struct {
	adminDSN string // DSN of a maintenance database, for CREATE DATABASE
	srv      *server

	mu     sync.Mutex
	closed bool
}

// Start returns the external server named by FENCEGW_TEST_POSTGRES_DSN after
// checking that it answers, or else starts an owned cluster and waits until
// it accepts connections. The caller must Close it.
func Start() (*Cluster, error) {
	if dsn := os.Getenv(envDSN); dsn != "" {
		return external(dsn)
	}
	return startOwned()
}

func external(dsn string) (*Cluster, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("testpg: connect to %s: %w", envDSN, err)
	}
	conn.Close(ctx)
	return &Cluster{adminDSN: dsn}, nil
}

func startOwned() (*Cluster, error) {
	srv, err := newServer()
	if err != nil {
		return nil, err
	}
	return &Cluster{adminDSN: srv.dsn("postgres"), srv: srv}, nil
}

// Owned reports whether this package started the server, so that Stop and
// Restart work; it is false for FENCEGW_TEST_POSTGRES_DSN.
func (c *Cluster) Owned() bool { return c.srv != nil }

// Close stops an owned server and removes its files; for an external server
// it does nothing. Later calls return nil.
func (c *Cluster) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.srv == nil {
		return nil
	}
	return c.srv.destroy()
}

// Stop shuts an owned server down at once (SIGQUIT: immediate shutdown,
// like a crash) and keeps its data. Open connections are cut and new ones
// are refused until Restart. Everything committed before Stop was called is
// there after Restart: Stop first runs a CHECKPOINT, because the server runs
// with synchronous_commit=off and would otherwise lose the latest
// acknowledged commits. It fails for an external server.
func (c *Cluster) Stop() error {
	return c.withOwned(func(srv *server) error { return srv.stop(true) })
}

// Kill crashes an owned server: it SIGKILLs the postmaster and then its
// remaining processes, with no checkpoint, and returns once none of them is
// left. Open connections are cut and new ones are refused until Restart,
// which recovers from the WAL. Only commits whose WAL was written survive:
// the server runs with synchronous_commit=off, so commits acknowledged in
// the last few hundred milliseconds (3 × wal_writer_delay) may be lost, as
// they would be on a real server so configured. A client that needs its
// acknowledged commits to survive Kill sets synchronous_commit=on for its
// session (a DSN parameter). Killing a stopped server does nothing. It
// fails for an external server.
func (c *Cluster) Kill() error {
	return c.withOwned(func(srv *server) error { return srv.kill() })
}

// Restart starts an owned server again on the same port and data directory,
// stopping it first if it is running, and waits until it accepts
// connections. It fails for an external server.
func (c *Cluster) Restart() error {
	return c.withOwned(func(srv *server) error {
		if err := srv.stop(true); err != nil {
			return err
		}
		return srv.start()
	})
}

// RestartAsStandby restarts an owned server as a hot standby (of no
// primary): it keeps everything committed before the call, accepts
// read-only connections, and reports pg_is_in_recovery() until Promote. It
// fails for an external server.
func (c *Cluster) RestartAsStandby() error {
	return c.withOwned(func(srv *server) error {
		// stop checkpoints first, which also logs the snapshot of running
		// transactions a hot standby needs before it accepts connections.
		if err := srv.stop(true); err != nil {
			return err
		}
		if err := srv.signalStandby(); err != nil {
			return err
		}
		return srv.start()
	})
}

// Promote ends the recovery RestartAsStandby began and returns once the
// server accepts writes. It fails for an external server.
func (c *Cluster) Promote() error {
	return c.withOwned(func(*server) error {
		ctx, cancel := context.WithTimeout(context.Background(), 70*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, c.adminDSN)
		if err != nil {
			return fmt.Errorf("testpg: promote: %w", err)
		}
		defer conn.Close(context.Background())
		var promoted bool
		if err := conn.QueryRow(ctx, "SELECT pg_promote(true, 60)").Scan(&promoted); err != nil {
			return fmt.Errorf("testpg: promote: %w", err)
		}
		if !promoted {
			return errors.New("testpg: promote: not promoted within 60s")
		}
		return nil
	})
}

// TerminateBackends ends, with pg_terminate_backend, every client session
// connected to database (a name, or a DSN such as NewDatabase returns)
// other than its own, waits until they are gone, and returns how many it
// ended. Their clients see "terminating connection due to administrator
// command" or a closed connection on their next use. It fails tb if the
// server cannot be asked.
func (c *Cluster) TerminateBackends(tb testing.TB, database string) int {
	tb.Helper()
	if strings.Contains(database, "://") || strings.Contains(database, "=") {
		cfg, err := pgx.ParseConfig(database)
		if err != nil {
			tb.Fatalf("testpg: terminate backends: %v", err)
		}
		database = cfg.Database
	}
	n, err := c.terminateBackends(database)
	if err != nil {
		tb.Fatalf("testpg: terminate backends of %s: %v", database, err)
	}
	return n
}

func (c *Cluster) terminateBackends(database string) (int, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return 0, errClosed
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.adminDSN)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	// Choose the sessions first, then end them: in one query the planner
	// may call pg_terminate_backend before the other conditions are checked,
	// on every session of the server, this one included.
	var pids []int32
	err = conn.QueryRow(ctx, `
		SELECT coalesce(array_agg(pid), '{}') FROM pg_stat_activity
		WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
		database).Scan(&pids)
	if err != nil {
		return 0, err
	}
	// A session that ended in between is not counted.
	err = conn.QueryRow(ctx, `
		SELECT coalesce(array_agg(pid), '{}') FROM unnest($1::int[]) AS pid
		WHERE pg_terminate_backend(pid)`, pids).Scan(&pids)
	if err != nil {
		return 0, err
	}
	// pg_terminate_backend only signals; wait until the sessions are over.
	for {
		var left int
		err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)", pids).Scan(&left)
		if err != nil {
			return 0, err
		}
		if left == 0 {
			return len(pids), nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%d of %d terminated sessions still there: %w", left, len(pids), ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// withOwned runs fn on the owned server, holding c.mu; it fails for a
// closed or an external cluster.
func (c *Cluster) withOwned(fn func(*server) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ownedOpen(); err != nil {
		return err
	}
	return fn(c.srv)
}

func (c *Cluster) ownedOpen() error {
	if c.closed {
		return errClosed
	}
	if c.srv == nil {
		return errNotOwned
	}
	return nil
}

// NewDatabase creates an empty database with a unique name and returns its
// DSN; for an owned cluster that is
// postgres://postgres@127.0.0.1:PORT/NAME?sslmode=disable. It fails tb if
// the database cannot be created, and drops the database, best effort, when
// tb ends.
func (c *Cluster) NewDatabase(tb testing.TB) string {
	tb.Helper()
	name, err := databaseName(tb.Name())
	if err != nil {
		tb.Fatalf("testpg: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.admin(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatalf("testpg: create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		if err := c.dropDatabase(name); err != nil {
			tb.Logf("testpg: drop database %s: %v", name, err)
		}
	})
	dsn, err := c.databaseDSN(name)
	if err != nil {
		tb.Fatalf("testpg: %v", err)
	}
	return dsn
}

// admin runs one statement on the maintenance database.
func (c *Cluster) admin(ctx context.Context, sql string) error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return errClosed
	}
	conn, err := pgx.Connect(ctx, c.adminDSN)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// dropDatabase drops name, disconnecting its clients. A closed or stopped
// owned cluster needs no cleanup: its files go with it.
func (c *Cluster) dropDatabase(name string) error {
	c.mu.Lock()
	skip := c.closed || (c.srv != nil && !c.srv.running())
	c.mu.Unlock()
	if skip {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	ident := pgx.Identifier{name}.Sanitize()
	err := c.admin(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)")
	if err != nil {
		// WITH (FORCE) needs PostgreSQL 13; older servers take the plain form.
		if err2 := c.admin(ctx, "DROP DATABASE IF EXISTS "+ident); err2 == nil {
			return nil
		}
	}
	return err
}

// databaseDSN is adminDSN pointed at database name.
func (c *Cluster) databaseDSN(name string) (string, error) {
	if c.srv != nil {
		return c.srv.dsn(name), nil
	}
	dsn := c.adminDSN
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse %s: %w", envDSN, err)
		}
		u.Path, u.RawPath = "/"+name, ""
		return u.String(), nil
	}
	// Keyword/value form: a later keyword overrides an earlier one.
	return dsn + " dbname=" + name, nil
}

// databaseName derives a unique database name from a test name: a readable
// part, then random hex so that concurrent test binaries sharing one
// external server do not collide. It fits PostgreSQL's 63-byte limit.
func databaseName(testName string) (string, error) {
	var b strings.Builder
	b.WriteString("fgw_")
	for _, r := range strings.ToLower(testName) {
		if b.Len() >= 40 {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", fmt.Errorf("random database name: %w", err)
	}
	b.WriteByte('_')
	b.WriteString(hex.EncodeToString(rnd[:]))
	return b.String(), nil
}
