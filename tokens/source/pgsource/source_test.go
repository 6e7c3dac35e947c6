package pgsource_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens/source"
	"github.com/fencegw/fencegw/tokens/source/pgsource"
	"github.com/fencegw/fencegw/tokens/source/sourcetest"
)

// TestSeedRenewal drives the seed's RENEW: renewal keeps the epoch and the
// lease live, and a leader that was taken over cannot renew.
func TestSeedRenewal(t *testing.T) {
	lease, s := seeded(t)
	const r = "invoice-sweeper"

	if e := acquire(t, lease, r, "node-a", 1); e != 1 {
		t.Fatalf("node-a acquired epoch %d, want 1", e)
	}
	if !renew(t, lease, r, "node-a", 3600, 1) {
		t.Fatal("node-a could not renew")
	}
	time.Sleep(1100 * time.Millisecond) // past the first deadline, not the renewed one
	sourcetest.MustLeader(t, s, r, source.Leader{Held: true, Epoch: 1, Holder: "node-a", Live: true})
	if e := acquire(t, lease, r, "node-b", 15); e != 0 {
		t.Fatalf("node-b acquired epoch %d while node-a holds a renewed lease", e)
	}

	exec(t, lease, "UPDATE leader_lease SET expires_at = now() - interval '1 second' WHERE name = $1", r)
	if e := acquire(t, lease, r, "node-b", 15); e != 2 {
		t.Fatalf("node-b acquired epoch %d, want 2", e)
	}
	if renew(t, lease, r, "node-a", 15, 1) {
		t.Fatal("node-a renewed a lease node-b holds")
	}
	sourcetest.MustCheck(t, s, r, 1, sourcetest.Superseded)
	sourcetest.MustCheck(t, s, r, 2, sourcetest.Admit)
}

// TestNulls: a NULL holder or a NULL expiry is never live; a NULL epoch is
// no leader.
func TestNulls(t *testing.T) {
	dsn, conn := database(t)
	exec(t, conn, `CREATE TABLE leader_lease (name text PRIMARY KEY, holder text, epoch bigint, expires_at timestamptz)`)
	exec(t, conn, `INSERT INTO leader_lease VALUES
		('bare', NULL, 0, NULL),
		('no-expiry', 'node-a', 3, NULL),
		('no-holder', NULL, 4, now() + interval '1 hour'),
		('no-epoch', 'node-a', NULL, now() + interval '1 hour'),
		('live', 'node-a', 5, now() + interval '1 hour'),
		('infinite', 'node-a', 6, 'infinity')`)
	s := open(t, pgsource.Options{DSN: dsn})
	for _, tc := range []struct {
		name string
		want source.Leader
	}{
		{"bare", source.Leader{}},
		{"no-expiry", source.Leader{Held: true, Epoch: 3, Holder: "node-a"}},
		{"no-holder", source.Leader{Held: true, Epoch: 4}},
		{"no-epoch", source.Leader{Holder: "node-a", Live: true}},
		{"live", source.Leader{Held: true, Epoch: 5, Holder: "node-a", Live: true}},
		{"infinite", source.Leader{Held: true, Epoch: 6, Holder: "node-a", Live: true}},
	} {
		sourcetest.MustLeader(t, s, tc.name, tc.want)
	}
	sourcetest.MustCheck(t, s, "no-expiry", 3, sourcetest.Lapsed)
	sourcetest.MustCheck(t, s, "no-holder", 4, sourcetest.Lapsed)
	sourcetest.MustCheck(t, s, "no-epoch", 1, sourcetest.NoLeader)
	sourcetest.MustLeader(t, s, "", source.Leader{})
}

// TestCustomNames: schema-qualified, mixed-case and quote-bearing names
// are quoted, not folded or injected; an integer epoch and a holder of
// another type are read.
func TestCustomNames(t *testing.T) {
	dsn, conn := database(t)
	exec(t, conn, `CREATE SCHEMA "Elect"`)
	exec(t, conn, `CREATE TABLE "Elect"."Leases" ("Resource" varchar(64) PRIMARY KEY, "owner""id" uuid, gen integer NOT NULL, "until" timestamptz)`)
	exec(t, conn, `INSERT INTO "Elect"."Leases" VALUES ('jobs', '6f1c2a7e-0000-4000-8000-000000000001', 41, now() + interval '1 minute')`)
	// A table with the default name in public must not be read instead.
	exec(t, conn, seedDDL)
	s := open(t, pgsource.Options{
		DSN:           dsn,
		Table:         "Elect.Leases",
		NameColumn:    "Resource",
		HolderColumn:  `owner"id`,
		EpochColumn:   "gen",
		ExpiresColumn: "until",
	})
	sourcetest.MustLeader(t, s, "jobs", source.Leader{Held: true, Epoch: 41, Holder: "6f1c2a7e-0000-4000-8000-000000000001", Live: true})
	sourcetest.MustCheck(t, s, "jobs", 41, sourcetest.Admit)
	sourcetest.MustCheck(t, s, "jobs", 40, sourcetest.Superseded)
	sourcetest.MustLeader(t, s, "invoice-sweeper", source.Leader{})
	sourcetest.MustLeader(t, s, "x' OR true --", source.Leader{})

	// Unqualified names resolve through the search_path.
	exec(t, conn, `CREATE TABLE my_leases (n text PRIMARY KEY, h text, e bigint, x timestamp)`)
	exec(t, conn, `INSERT INTO my_leases VALUES ('r', 'h1', 7, now() + interval '1 minute')`)
	s2 := open(t, pgsource.Options{DSN: dsn, Table: "my_leases", NameColumn: "n", HolderColumn: "h", EpochColumn: "e", ExpiresColumn: "x"})
	sourcetest.MustLeader(t, s2, "r", source.Leader{Held: true, Epoch: 7, Holder: "h1", Live: true})
}

// TestDuplicateNames: a name column that is not unique fails closed.
func TestDuplicateNames(t *testing.T) {
	dsn, conn := database(t)
	exec(t, conn, `CREATE TABLE leader_lease (name text, holder text, epoch bigint, expires_at timestamptz)`)
	exec(t, conn, `INSERT INTO leader_lease VALUES ('r', 'a', 1, 'infinity'), ('r', 'b', 2, 'infinity'), ('ok', 'a', 1, 'infinity')`)
	s := open(t, pgsource.Options{DSN: dsn})
	if l, err := s.Current(sourcetest.Context(t, 10*time.Second), "r"); err == nil {
		t.Fatalf("Current with two rows = %+v, want an error", l)
	} else {
		t.Logf("Current with two rows: %v", err)
	}
	sourcetest.MustLeader(t, s, "ok", source.Leader{Held: true, Epoch: 1, Holder: "a", Live: true})
}

// TestOpenErrors: a bad configuration fails Open with an error naming the
// option.
func TestOpenErrors(t *testing.T) {
	dsn, conn := database(t)
	exec(t, conn, seedDDL)
	exec(t, conn, `CREATE TABLE text_epoch (name text, holder text, epoch text, expires_at timestamptz)`)
	exec(t, conn, `CREATE TABLE text_expiry (name text, holder text, epoch bigint, expires_at text)`)
	exec(t, conn, `CREATE TABLE int_name (name int, holder text, epoch bigint, expires_at timestamptz)`)
	for _, tc := range []struct {
		name string
		o    pgsource.Options
		want []string
	}{
		{"missing table", pgsource.Options{Table: "nope"}, []string{`Table "nope"`, "does not exist"}},
		{"missing schema", pgsource.Options{Table: "nope.leader_lease"}, []string{`Table "nope.leader_lease"`}},
		{"folded name", pgsource.Options{Table: "Leader_Lease"}, []string{`Table "Leader_Lease"`}},
		{"missing name column", pgsource.Options{NameColumn: "resource"}, []string{`NameColumn "resource"`, "no such column"}},
		{"missing holder column", pgsource.Options{HolderColumn: "owner"}, []string{`HolderColumn "owner"`}},
		{"missing epoch column", pgsource.Options{EpochColumn: "fencing_token"}, []string{`EpochColumn "fencing_token"`}},
		{"missing expiry column", pgsource.Options{ExpiresColumn: "until"}, []string{`ExpiresColumn "until"`}},
		{"text epoch", pgsource.Options{Table: "text_epoch"}, []string{`EpochColumn "epoch"`, "type text"}},
		{"text expiry", pgsource.Options{Table: "text_expiry"}, []string{`ExpiresColumn "expires_at"`, "type text"}},
		{"integer name", pgsource.Options{Table: "int_name"}, []string{`NameColumn "name"`, "type int4"}},
		{"standby wanted", pgsource.Options{DSN: dsn + "&target_session_attrs=standby"}, []string{"connect"}},
		{"empty DSN", pgsource.Options{DSN: " "}, []string{"DSN is empty"}},
		{"bad DSN", pgsource.Options{DSN: "postgres://x:secret@[::1/db"}, []string{"DSN"}},
		{"NUL", pgsource.Options{EpochColumn: "ep\x00och"}, []string{"EpochColumn", "NUL"}},
		{"empty schema", pgsource.Options{Table: ".leader_lease"}, []string{"Table", "empty"}},
		{"three parts", pgsource.Options{Table: "a.b.c"}, []string{`Table "a.b.c"`}},
		{"too long", pgsource.Options{HolderColumn: strings.Repeat("h", 64)}, []string{"HolderColumn", "63 bytes"}},
		{"bad UTF-8", pgsource.Options{NameColumn: "\xff"}, []string{"NameColumn", "UTF-8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			if o.DSN == "" {
				o.DSN = dsn
			}
			s, err := pgsource.Open(sourcetest.Context(t, 30*time.Second), o)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%+v) succeeded", tc.o)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("Open error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("Open error %q leaks the password", err)
			}
			t.Logf("%v", err)
		})
	}
}

// TestBrokenPooledConnectionsRetried terminates the source's sessions while
// its pool sits idle: the next read succeeds on a fresh connection instead
// of failing closed on a broken one.
func TestBrokenPooledConnectionsRetried(t *testing.T) {
	lease, s := seeded(t)
	const r = "invoice-sweeper"
	if e := acquire(t, lease, r, "node-a", 3600); e != 1 {
		t.Fatalf("node-a acquired epoch %d, want 1", e)
	}
	for i := range 3 {
		sourcetest.MustLeader(t, s, r, source.Leader{Held: true, Epoch: 1, Holder: "node-a", Live: true})
		// Waits until the backends exited; the pool's connections were
		// idle for far less than the second after which pgxpool pings.
		exec(t, lease, `SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()`)
		t.Logf("round %d: sessions terminated", i+1)
	}
	sourcetest.MustLeader(t, s, r, source.Leader{Held: true, Epoch: 1, Holder: "node-a", Live: true})
}
