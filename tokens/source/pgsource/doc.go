// Package pgsource is an epoch source backed by a PostgreSQL lease table,
// the seed article's
//
//	CREATE TABLE leader_lease (
//	  name        text PRIMARY KEY,
//	  holder      text,
//	  epoch       bigint NOT NULL DEFAULT 0,
//	  expires_at  timestamptz NOT NULL DEFAULT '-infinity'
//	);
//
// maintained by the team's own clients (ACQUIRE raises epoch, RENEW moves
// expires_at). fencegw only reads it: for a resource R, the leader is the row
// whose name is R, its epoch is the epoch column, and it is live while
// holder is not NULL and expires_at > now() on the database's clock. The
// table and column names are configurable (Options).
//
// Reads go to the primary only: every pooled connection checks that the
// server is not in recovery, because a standby may lag and admit a
// superseded epoch.
package pgsource
