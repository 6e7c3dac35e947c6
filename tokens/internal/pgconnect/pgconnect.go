// Package pgconnect bounds how long opening a PostgreSQL connection may
// take. The PostgreSQL store and the PostgreSQL epoch source both need it:
// a connection begun while the server cannot be reached (a partition, a
// blackholed route) would otherwise wait for the kernel's TCP timeout,
// holding a place in the pool after the partition healed, and the client
// would recover long after the server is back.
package pgconnect

import (
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultTimeout bounds opening a connection when the DSN sets no
// connect_timeout.
const DefaultTimeout = 5 * time.Second

// Bound sets cc.ConnectTimeout to DefaultTimeout when the DSN set none (0);
// a connect_timeout the DSN gives is kept.
func Bound(cc *pgx.ConnConfig) {
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = DefaultTimeout
	}
}
