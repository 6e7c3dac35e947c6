package pgsource_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens/internal/pgconnect"
	"github.com/fencegw/fencegw/tokens/source/pgsource"
)

// TestConnectTimeout: a server that takes the connection but never answers
// (a blackholed or stalled server) fails Open after the default connect
// timeout when the DSN sets none, not when the caller's much longer
// context ends: connections begun during a partition give up soon after.
func TestConnectTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	defer l.Close() // never accepted: the handshake completes, nothing answers
	ctx, cancel := context.WithTimeout(context.Background(), 4*pgconnect.DefaultTimeout)
	defer cancel()
	start := time.Now()
	s, err := pgsource.Open(ctx, pgsource.Options{DSN: "postgres://u@" + l.Addr().String() + "/db?sslmode=disable"})
	took := time.Since(start)
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded against a server that never answers")
	}
	if took > 2*pgconnect.DefaultTimeout {
		t.Fatalf("Open gave up after %v, want about %v (DefaultTimeout): %v", took, pgconnect.DefaultTimeout, err)
	}
	t.Logf("Open failed after %v: %v", took.Round(time.Millisecond), err)
}
