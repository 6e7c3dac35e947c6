package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// requirePrimary makes every connection check that the server is not in
// recovery, after whatever check target_session_attrs in the DSN set up.
// A standby may lag the primary, and a Store must never read a stale HWM.
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

// durableCommits turns synchronous_commit on for a new session whose
// default is off: with it off, a server crash can forget admitted HWMs. Other
// values (local, remote_write, on, remote_apply) are the operator's choice
// and are kept.
func durableCommits(ctx context.Context, conn *pgx.Conn) error {
	_, err := conn.Exec(ctx, `SELECT set_config('synchronous_commit', 'on', false)
WHERE current_setting('synchronous_commit') = 'off'`)
	if err != nil {
		return fmt.Errorf("set synchronous_commit: %w", err)
	}
	return nil
}
