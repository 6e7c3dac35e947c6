package pgsource

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// requirePrimary makes every connection check that the server is not in
// recovery. Without target_session_attrs (or with "any") that is the only
// check; with another setting, the setting's own check runs first and the
// primary check after it, so a DSN asking for a standby fails to connect
// rather than read a replica that may lag behind a takeover.
func requirePrimary(cc *pgx.ConnConfig) {
	fromDSN := cc.ValidateConnect
	if fromDSN == nil {
		cc.ValidateConnect = pgconn.ValidateConnectTargetSessionAttrsPrimary
		return
	}
	cc.ValidateConnect = func(ctx context.Context, pc *pgconn.PgConn) error {
		// A *pgconn.NotPreferredError (prefer-standby on a primary) goes back
		// unchanged: pgconn then accepts this primary if no standby is found.
		if err := fromDSN(ctx, pc); err != nil {
			return err
		}
		return pgconn.ValidateConnectTargetSessionAttrsPrimary(ctx, pc)
	}
}
