package pgstore

import (
	"github.com/jackc/pgx/v5"
)

// Option configures Open.
type Option func(*options)

type options struct {
	schema string
}

// WithSchema puts the store's tables in the named schema, creating the schema
// if it is missing. By default the tables go to the first schema of the
// session's search_path (normally public).
func WithSchema(schema string) Option {
	return func(o *options) { o.schema = schema }
}

// Table names. The HWM table's columns are resource (text, primary key),
// epoch (bigint, positive: the HWM), updated_at (timestamptz) and, from
// schema version 2, issued (bigint: the highest epoch a lease grant issued
// for the resource, 0 if none). The lease table holds one row per lease ever
// acquired: name, holder, epoch, ttl_ms, expires_at and granted_at, the
// deadlines on the database's clock, and, from schema version 4, owner (text:
// the Name of the tokens.Caller that acquired the grant, empty if unowned)
// and, from version 5, lock_delay_ms and released. The idempotency table
// (version 6) holds one row per (resource, key) claimed: its record as
// JSON, the claim and state copied out of it, and expires_at. The audit
// table (version 8) holds one row per audit entry: stream, id, the entry as
// JSON, and its resource, kind, holder, replica, first_at and last_at.
// The lease event table (version 9) holds one row per change of a lease
// row, numbered by a bigserial id: the row as the change left it.
const (
	hwmTable     = "fencegw_hwm"
	leaseTable   = "fencegw_lease"
	keyTable     = "fencegw_key"
	idemTable    = "fencegw_idempotency"
	auditTable   = "fencegw_audit"
	eventTable   = "fencegw_lease_event"
	versionTable = "fencegw_schema_version"
)

// ident returns the quoted, schema-qualified name of table.
func (o *options) ident(table string) string {
	if o.schema == "" {
		return pgx.Identifier{table}.Sanitize()
	}
	return pgx.Identifier{o.schema, table}.Sanitize()
}
