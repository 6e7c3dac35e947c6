// Package pgprimary keeps PostgreSQL clients on the primary. The PostgreSQL
// store and the PostgreSQL epoch source both need it: a standby may lag
// behind the primary, and reading a stale high-water mark or a superseded
// leader from one would admit a write that must be refused.
package pgprimary

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Require makes every connection made with cc check that the server is not
// in recovery, and refuse it (with an error wrapping
// pgconn.ErrStandbyConnection) when it is.
//
// The check runs after whatever check target_session_attrs in the DSN set
// up, so that setting is honoured but can never lead to a standby: "any" or
// no setting gets the primary check alone; "standby" or "read-only" on a
// standby fails; "prefer-standby" on a primary keeps its
// *pgconn.NotPreferredError (pgconn then takes this primary when no standby
// is found), and the primary check follows once it does.
func Require(cc *pgx.ConnConfig) {
	fromDSN := cc.ValidateConnect
	if fromDSN == nil {
		cc.ValidateConnect = pgconn.ValidateConnectTargetSessionAttrsPrimary
		return
	}
	cc.ValidateConnect = func(ctx context.Context, pc *pgconn.PgConn) error {
		if err := fromDSN(ctx, pc); err != nil {
			return err
		}
		return pgconn.ValidateConnectTargetSessionAttrsPrimary(ctx, pc)
	}
}
