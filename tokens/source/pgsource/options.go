package pgsource

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// Defaults for the Options fields left empty: the seed's table.
const (
	DefaultTable         = "leader_lease"
	DefaultNameColumn    = "name"
	DefaultHolderColumn  = "holder"
	DefaultEpochColumn   = "epoch"
	DefaultExpiresColumn = "expires_at"
)

// maxIdentifierLen is PostgreSQL's identifier limit (NAMEDATALEN-1 bytes);
// the server silently truncates longer names, which could name another
// table or column.
const maxIdentifierLen = 63

// Options configures Open.
//
// Identifiers are used exactly as written and quoted, so they are
// case-sensitive: a table created as CREATE TABLE LeaderLease is named
// leaderlease (PostgreSQL folds unquoted names to lower case).
type Options struct {
	// DSN is a libpq connection string (URL or keyword/value form). It must
	// not be empty. target_session_attrs in it is honoured, but the primary
	// check always applies as well (see Open).
	DSN string
	// Table is the lease table, optionally schema-qualified as
	// "schema.table" (split on the dot; names containing a dot cannot be
	// expressed). DefaultTable if empty.
	Table string
	// NameColumn holds the resource name: unique, of type text, varchar,
	// char or a type from an extension (citext); DefaultNameColumn if empty.
	NameColumn string
	// HolderColumn holds the leader's identity, NULL when none;
	// DefaultHolderColumn if empty. Any type with a text cast.
	HolderColumn string
	// EpochColumn holds the epoch, an integer column (bigint, integer or
	// smallint); DefaultEpochColumn if empty.
	EpochColumn string
	// ExpiresColumn holds the lease deadline, compared with the
	// database's now() (timestamptz; timestamp without time zone is
	// accepted and then compared in the session's TimeZone);
	// DefaultExpiresColumn if empty.
	ExpiresColumn string
}

// WithDefaults returns o with every empty identifier set to its default.
func (o Options) WithDefaults() Options {
	set := func(p *string, def string) {
		if *p == "" {
			*p = def
		}
	}
	set(&o.Table, DefaultTable)
	set(&o.NameColumn, DefaultNameColumn)
	set(&o.HolderColumn, DefaultHolderColumn)
	set(&o.EpochColumn, DefaultEpochColumn)
	set(&o.ExpiresColumn, DefaultExpiresColumn)
	return o
}

// Validate checks o after WithDefaults: the DSN is not empty and every
// identifier is one PostgreSQL will take as written (non-empty parts, no
// NUL, valid UTF-8, at most 63 bytes; the table at most schema.table). The
// error names the offending field. Validate does not connect: Open checks
// that the table and columns exist.
func (o Options) Validate() error {
	if strings.TrimSpace(o.DSN) == "" {
		return errors.New("pgsource: DSN is empty")
	}
	if _, err := tableIdent(o.Table); err != nil {
		return err
	}
	for _, c := range o.columns() {
		if err := checkIdent(c.field, c.name); err != nil {
			return err
		}
	}
	return nil
}

// column is one configured column and the Options field that names it.
type column struct{ field, name string }

func (o Options) columns() []column {
	return []column{
		{"NameColumn", o.NameColumn},
		{"HolderColumn", o.HolderColumn},
		{"EpochColumn", o.EpochColumn},
		{"ExpiresColumn", o.ExpiresColumn},
	}
}

// tableIdent splits table on its dot into at most schema and table and
// validates both parts.
func tableIdent(table string) (pgx.Identifier, error) {
	parts := strings.Split(table, ".")
	if len(parts) > 2 {
		return nil, fmt.Errorf("pgsource: Table %q: want table or schema.table", table)
	}
	for _, p := range parts {
		if err := checkIdent("Table", p); err != nil {
			return nil, fmt.Errorf("%w (in %q)", err, table)
		}
	}
	return pgx.Identifier(parts), nil
}

func checkIdent(field, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("pgsource: %s: empty identifier", field)
	case strings.ContainsRune(name, 0):
		return fmt.Errorf("pgsource: %s %q: identifier contains NUL", field, name)
	case !utf8.ValidString(name):
		return fmt.Errorf("pgsource: %s %q: identifier is not valid UTF-8", field, name)
	case len(name) > maxIdentifierLen:
		return fmt.Errorf("pgsource: %s %q: identifier longer than %d bytes", field, name, maxIdentifierLen)
	}
	return nil
}

// query is the leader read: epoch, holder as text, and whether the lease
// runs past the database's now() (NULL when expires is NULL). LIMIT 2
// detects a name column that is not unique.
func (o Options) query() string {
	t, _ := tableIdent(o.Table)
	q := func(s string) string { return pgx.Identifier{s}.Sanitize() }
	return fmt.Sprintf("SELECT %s, %s::text, %s > now() FROM %s WHERE %s = $1 LIMIT 2",
		q(o.EpochColumn), q(o.HolderColumn), q(o.ExpiresColumn), t.Sanitize(), q(o.NameColumn))
}
