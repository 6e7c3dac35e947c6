// Package pgretry runs idempotent PostgreSQL statements through a pgx pool,
// once more on a fresh connection when the first attempt found its pooled
// connection broken: the server restarted, failed over or terminated the
// session while the connection sat idle. The caller's own deadline and the
// server's answers to the statement are never retried.
package pgretry

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// QueryRow runs sql, which must be idempotent (a read, or a write whose
// repetition changes nothing), and scans its one row into dest, through Do.
// pgx.ErrNoRows is returned as is.
func QueryRow(ctx context.Context, pool *pgxpool.Pool, sql string, args []any, dest ...any) error {
	return Do(ctx, pool, func() error { return pool.QueryRow(ctx, sql, args...).Scan(dest...) })
}

// Do runs op, which must be idempotent and use pool. When it fails on a
// broken connection, every pooled connection is discarded (they share the
// cause: a restart or failover breaks them all) and op runs once more on a
// new one.
func Do(ctx context.Context, pool *pgxpool.Pool, op func() error) error {
	err := op()
	if !Broken(ctx, err) {
		return err
	}
	pool.Reset()
	return op()
}

// Broken reports whether err says the connection was lost rather than that
// the statement was answered: a PostgreSQL connection-exception (class 08)
// or operator-intervention error (57P01 admin shutdown, 57P02 crash
// shutdown, 57P03 cannot connect now), or a failure below the protocol
// (a closed socket, a reset). An error after ctx ended is the caller's
// deadline, never Broken.
func Broken(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil || errors.Is(err, pgx.ErrNoRows) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return false // no connection could be had at all: a retry would fail alike
	}
	var ne net.Error
	return pgconn.SafeToRetry(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.As(err, &ne) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
