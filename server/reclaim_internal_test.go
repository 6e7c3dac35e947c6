package server

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/boltstore"
)

// TestReclaimLoop: the background loop reclaims released leases' records
// in batches until none is left, keeps a live one, and stops on close.
func TestReclaimLoop(t *testing.T) {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "fencegw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		g, err := s.Acquire(ctx, name, "h", tokens.Terms{TTL: time.Minute}, tokens.Caller{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, name, "h", g.Epoch, tokens.Caller{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Acquire(ctx, "live", "h", tokens.Terms{TTL: time.Minute}, tokens.Caller{}); err != nil {
		t.Fatal(err)
	}
	r := startReclaim(s, reclaimTerms{every: 10 * time.Millisecond, batch: 2, timeout: time.Second}, slog.New(slog.DiscardHandler))
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := s.Lease(ctx, "e"); errors.Is(err, tokens.ErrLeaseNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("released leases not reclaimed within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.close()
	r.close() // twice is safe
	for _, name := range []string{"a", "b", "c", "d"} {
		if _, err := s.Lease(ctx, name); !errors.Is(err, tokens.ErrLeaseNotFound) {
			t.Fatalf("lease %q after the loop: %v, want reclaimed", name, err)
		}
	}
	if l, err := s.Lease(ctx, "live"); err != nil || !l.Held {
		t.Fatalf("the live lease after the loop: %+v, %v", l, err)
	}
	var nilLoop *reclaimLoop
	nilLoop.close() // a server without one
}
