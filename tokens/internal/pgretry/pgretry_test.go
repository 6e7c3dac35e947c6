package pgretry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func TestBroken(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	live := context.Background()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"nil", live, nil, false},
		{"no rows", live, pgx.ErrNoRows, false},
		{"unique violation", live, &pgconn.PgError{Code: "23505"}, false},
		{"serialization failure", live, &pgconn.PgError{Code: "40001"}, false},
		{"read only transaction", live, &pgconn.PgError{Code: "25006"}, false},
		{"admin shutdown", live, fmt.Errorf("query: %w", &pgconn.PgError{Code: "57P01"}), true},
		{"crash shutdown", live, &pgconn.PgError{Code: "57P02"}, true},
		{"cannot connect now", live, &pgconn.PgError{Code: "57P03"}, true},
		{"connection failure", live, &pgconn.PgError{Code: "08006"}, true},
		{"eof", live, fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{"reset", live, fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{"broken pipe", live, fmt.Errorf("write: %w", syscall.EPIPE), true},
		{"connect failed", live, &pgconn.ConnectError{}, false},
		{"caller's deadline", cancelled, fmt.Errorf("read: %w", io.EOF), false},
		{"other", live, errors.New("can't scan into dest[0]"), false},
	} {
		if got := Broken(tc.ctx, tc.err); got != tc.want {
			t.Errorf("%s: Broken(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
