package pgconnect_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/tokens/internal/pgconnect"
)

// TestBound: a DSN without connect_timeout gets DefaultTimeout; one with
// it keeps its own.
func TestBound(t *testing.T) {
	for dsn, want := range map[string]time.Duration{
		"postgres://u@127.0.0.1:5432/db":                   pgconnect.DefaultTimeout,
		"postgres://u@127.0.0.1:5432/db?connect_timeout=2": 2 * time.Second,
		"host=127.0.0.1 user=u connect_timeout=9":          9 * time.Second,
	} {
		cc, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatalf("ParseConfig(%q): %v", dsn, err)
		}
		pgconnect.Bound(cc)
		if cc.ConnectTimeout != want {
			t.Fatalf("%q: ConnectTimeout %v, want %v", dsn, cc.ConnectTimeout, want)
		}
	}
}
