package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrationLock is the pg_advisory_xact_lock key that serialises schema
// migrations of concurrent Opens on one database ("fencegw" in ASCII).
const migrationLock int64 = 0x66656e6365677700

// ErrSchemaTooNew means the database schema was migrated by a newer version
// of fencegw than this one; Open refuses it rather than guess its meaning.
var ErrSchemaTooNew = errors.New("pgstore: database schema is newer than this fencegw")

// migrations are applied in order; migration i brings the schema to
// version i+1. Never edit or reorder one that has shipped: append.
var migrations = []func(o *options) string{
	func(o *options) string {
		// COLLATE "C": byte-wise equality and an index that no libc or ICU
		// upgrade can silently reorder.
		return `CREATE TABLE ` + o.ident(hwmTable) + ` (
	resource   text COLLATE "C" PRIMARY KEY,
	epoch      bigint NOT NULL CHECK (epoch > 0),
	updated_at timestamptz NOT NULL DEFAULT now()
)`
	},
	func(o *options) string {
		// Leases. issued is the highest epoch a grant issued for the
		// resource (0: no lease of that name was ever granted); Advance
		// refuses epochs above it. Every grant sets epoch = issued, and
		// Advance admits no epoch above issued, so epoch <= issued holds
		// for every leased resource: the table constraint checks it.
		// Several statements: Exec without arguments uses the simple
		// protocol, which runs them all inside the migration transaction.
		return `ALTER TABLE ` + o.ident(hwmTable) + `
	ADD COLUMN issued bigint NOT NULL DEFAULT 0 CHECK (issued >= 0),
	ADD CHECK (issued = 0 OR epoch <= issued);
CREATE TABLE ` + o.ident(leaseTable) + ` (
	name       text COLLATE "C" PRIMARY KEY,
	holder     text COLLATE "C" NOT NULL,
	epoch      bigint NOT NULL CHECK (epoch > 0),
	ttl_ms     bigint NOT NULL CHECK (ttl_ms > 0),
	expires_at timestamptz NOT NULL,
	granted_at timestamptz NOT NULL
)`
	},
	func(o *options) string {
		// The token authority's generated signing key, shared by every
		// replica when no key file is configured.
		return `CREATE TABLE ` + o.ident(keyTable) + ` (
	name       text COLLATE "C" PRIMARY KEY,
	key        bytea NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
)`
	},
	func(o *options) string {
		// The owner of each lease's grant: the name of the caller (API
		// key) that acquired it. Grants made before this version, and by
		// anonymous callers, are unowned (''). Adding a column with a
		// constant default rewrites no rows.
		return `ALTER TABLE ` + o.ident(leaseTable) + ` ADD COLUMN owner text COLLATE "C" NOT NULL DEFAULT ''`
	},
	func(o *options) string {
		// Lock-delay: each grant's own (0: none), and whether it ended by
		// a release while live (a clean end, which skips the delay).
		// Grants made before this version have none.
		return `ALTER TABLE ` + o.ident(leaseTable) + `
	ADD COLUMN lock_delay_ms bigint NOT NULL DEFAULT 0 CHECK (lock_delay_ms >= 0),
	ADD COLUMN released boolean NOT NULL DEFAULT false`
	},
	func(o *options) string {
		// Idempotency records (Idempotency-Key), purged once expired.
		return `CREATE TABLE ` + o.ident(idemTable) + ` (
	resource   text COLLATE "C" NOT NULL,
	key        text COLLATE "C" NOT NULL,
	record     bytea NOT NULL,
	claim      text NOT NULL,
	state      text NOT NULL,
	expires_at timestamptz NOT NULL,
	PRIMARY KEY (resource, key)
);
CREATE INDEX ON ` + o.ident(idemTable) + ` (expires_at)`
	},
	func(o *options) string {
		// Lease watches: a version that every grant, renewal and release
		// raises, and a notification on channel leaseChannel, with the
		// lease's name, after every change of a lease row.
		fn := o.ident("fencegw_lease_notify")
		return `ALTER TABLE ` + o.ident(leaseTable) + ` ADD COLUMN version bigint NOT NULL DEFAULT 0;
CREATE FUNCTION ` + fn + `() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('` + leaseChannel + `', NEW.name);
	RETURN NULL;
END
$$;
CREATE TRIGGER fencegw_lease_notify AFTER INSERT OR UPDATE ON ` + o.ident(leaseTable) + `
	FOR EACH ROW EXECUTE FUNCTION ` + fn + `()`
	},
	func(o *options) string {
		// The durable audit: one row per entry of each stream, the entry
		// as JSON and the columns lists filter by copied out of it. IDs
		// sort by interval, so the primary key serves paging and purges.
		t := o.ident(auditTable)
		return `CREATE TABLE ` + t + ` (
	stream   text COLLATE "C" NOT NULL,
	id       text COLLATE "C" NOT NULL,
	resource text COLLATE "C" NOT NULL,
	kind     text COLLATE "C" NOT NULL,
	holder   text COLLATE "C" NOT NULL,
	replica  text COLLATE "C" NOT NULL,
	first_at timestamptz NOT NULL,
	last_at  timestamptz NOT NULL,
	entry    jsonb NOT NULL,
	PRIMARY KEY (stream, id)
);
CREATE INDEX ON ` + t + ` (stream, resource, id)`
	},
	func(o *options) string {
		// Lease watches, unfolded: every change of a lease row (its
		// version rose) is also a row of the event log, written by the
		// trigger in the statement that made the change, numbered by a
		// bigserial. Changes of one lease are numbered in the order they
		// committed: each takes the lease row's lock, held until commit,
		// before it takes its number. The log keeps about the last
		// keptEvents changes of all leases; existing leases start it.
		ev, lease, fn := o.ident(eventTable), o.ident(leaseTable), o.ident("fencegw_lease_notify")
		return `CREATE TABLE ` + ev + ` (
	id            bigserial PRIMARY KEY,
	name          text COLLATE "C" NOT NULL,
	holder        text COLLATE "C" NOT NULL,
	epoch         bigint NOT NULL,
	ttl_ms        bigint NOT NULL,
	expires_at    timestamptz NOT NULL,
	held          boolean NOT NULL,
	owner         text COLLATE "C" NOT NULL,
	lock_delay_ms bigint NOT NULL,
	released      boolean NOT NULL,
	version       bigint NOT NULL
);
CREATE INDEX ON ` + ev + ` (name, id);
INSERT INTO ` + ev + ` (name, holder, epoch, ttl_ms, expires_at, held, owner, lock_delay_ms, released, version)
	SELECT name, holder, epoch, ttl_ms, expires_at, expires_at > now(), owner, lock_delay_ms, released, version
	FROM ` + lease + ` ORDER BY name;
CREATE OR REPLACE FUNCTION ` + fn + `() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	new_id bigint;
BEGIN
	IF NEW.version > 0 AND (TG_OP = 'INSERT' OR NEW.version <> OLD.version) THEN
		INSERT INTO ` + ev + ` (name, holder, epoch, ttl_ms, expires_at, held, owner, lock_delay_ms, released, version)
		VALUES (NEW.name, NEW.holder, NEW.epoch, NEW.ttl_ms, NEW.expires_at, NEW.expires_at > now(), NEW.owner,
			NEW.lock_delay_ms, NEW.released, NEW.version)
		RETURNING id INTO new_id;
		IF new_id % 1024 = 0 THEN
			DELETE FROM ` + ev + ` WHERE id <= new_id - ` + strconv.Itoa(keptEvents) + `;
		END IF;
	END IF;
	PERFORM pg_notify('` + leaseChannel + `', NEW.name);
	RETURN NULL;
END
$$`
	},
}

// migrate brings the schema to the latest version in one transaction under
// an advisory lock. When the schema is already current it only reads.
func migrate(ctx context.Context, pool *pgxpool.Pool, o *options) error {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLock); err != nil {
		return fmt.Errorf("take migration lock: %w", err)
	}
	if o.schema != "" {
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT to_regnamespace($1) IS NOT NULL", pgx.Identifier{o.schema}.Sanitize()).Scan(&exists); err != nil {
			return fmt.Errorf("look up schema %q: %w", o.schema, err)
		}
		if !exists {
			if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{o.schema}.Sanitize()); err != nil {
				return fmt.Errorf("create schema %q: %w", o.schema, err)
			}
		}
	}
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", o.ident(versionTable)).Scan(&exists); err != nil {
		return fmt.Errorf("look up %s: %w", versionTable, err)
	}
	if !exists {
		_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+o.ident(versionTable)+` (
	version    integer PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT now()
)`)
		if err != nil {
			return fmt.Errorf("create %s: %w", versionTable, err)
		}
	}
	var version int
	if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+o.ident(versionTable)).Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if version > len(migrations) {
		return fmt.Errorf("%w: database is at version %d, this build knows %d", ErrSchemaTooNew, version, len(migrations))
	}
	for v := version; v < len(migrations); v++ {
		if _, err := tx.Exec(ctx, migrations[v](o)); err != nil {
			return fmt.Errorf("migrate to version %d: %w", v+1, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+o.ident(versionTable)+" (version) VALUES ($1)", v+1); err != nil {
			return fmt.Errorf("record version %d: %w", v+1, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit migrations: %w", err)
	}
	return nil
}
