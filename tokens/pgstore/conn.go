package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

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
