package pgsource

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SQLSTATE codes verify explains.
const (
	undefinedTable        = "42P01"
	undefinedColumn       = "42703"
	insufficientPrivilege = "42501"
)

// verify checks, on one connection, that o's table exists and can be read,
// that each column exists (epoch an integer, expires a timestamp), and that
// the statement Current runs succeeds. Errors name the Options field.
func verify(ctx context.Context, pool *pgxpool.Pool, o Options) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("pgsource: connect: %w", err)
	}
	defer conn.Release()
	ident, _ := tableIdent(o.Table)
	table := ident.Sanitize()

	if _, err := probe(ctx, conn.Conn(), "SELECT FROM "+table+" LIMIT 0"); err != nil {
		var pe *pgconn.PgError
		switch {
		case errors.As(err, &pe) && pe.Code == undefinedTable:
			return fmt.Errorf("pgsource: Table %q does not exist (or is not in the search_path): %w", o.Table, err)
		case errors.As(err, &pe) && pe.Code == insufficientPrivilege:
			return fmt.Errorf("pgsource: Table %q cannot be read by this user: %w", o.Table, err)
		}
		return fmt.Errorf("pgsource: checking Table %q: %w", o.Table, err)
	}
	for _, c := range o.columns() {
		oid, err := probe(ctx, conn.Conn(), "SELECT "+pgx.Identifier{c.name}.Sanitize()+" FROM "+table+" LIMIT 0")
		if err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == undefinedColumn {
				return fmt.Errorf("pgsource: %s %q: no such column in table %q: %w", c.field, c.name, o.Table, err)
			}
			return fmt.Errorf("pgsource: checking %s %q of table %q: %w", c.field, c.name, o.Table, err)
		}
		if err := checkType(conn.Conn(), c, oid, o.Table); err != nil {
			return err
		}
	}
	rows, err := conn.Query(ctx, o.query(), "")
	if err == nil {
		rows.Close()
		err = rows.Err()
	}
	if err != nil {
		return fmt.Errorf("pgsource: reading table %q: %w", o.Table, err)
	}
	return nil
}

// probe runs a query that returns no rows and reports the type of its
// first column (0 when it has none).
func probe(ctx context.Context, conn *pgx.Conn, sql string) (uint32, error) {
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		return 0, err
	}
	var oid uint32
	if fds := rows.FieldDescriptions(); len(fds) > 0 {
		oid = fds[0].DataTypeOID
	}
	rows.Close()
	return oid, rows.Err()
}

// firstUserOID is where OIDs of types created after initdb (extensions
// such as citext) begin.
const firstUserOID = 16384

// checkType refuses a name column that cannot hold a resource name, an
// epoch column that is not an integer and an expiry column that is not a
// timestamp: comparing them would be meaningless or fail on every request.
func checkType(conn *pgx.Conn, c column, oid uint32, table string) error {
	var ok bool
	var want string
	switch c.field {
	case "NameColumn":
		ok = oid == pgtype.TextOID || oid == pgtype.VarcharOID || oid == pgtype.BPCharOID ||
			oid == pgtype.NameOID || oid >= firstUserOID
		want = "text"
	case "EpochColumn":
		ok, want = oid == pgtype.Int8OID || oid == pgtype.Int4OID || oid == pgtype.Int2OID, "bigint, integer or smallint"
	case "ExpiresColumn":
		ok, want = oid == pgtype.TimestamptzOID || oid == pgtype.TimestampOID, "timestamptz"
	default:
		return nil
	}
	if ok {
		return nil
	}
	name := fmt.Sprintf("type OID %d", oid)
	if t, found := conn.TypeMap().TypeForOID(oid); found {
		name = t.Name
	}
	return fmt.Errorf("pgsource: %s %q of table %q has type %s, want %s", c.field, c.name, table, name, want)
}
