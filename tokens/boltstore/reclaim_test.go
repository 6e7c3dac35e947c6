package boltstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/boltstore"
)

// TestReclaimRetentionAcrossRestart: the retention of an ended lease runs
// from when it ended as the file records it, so a restart does not start
// it over; and a lease that ended less than the retention ago stays.
func TestReclaimRetentionAcrossRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fencegw.db")
	clock := &tokens.OffsetClock{}
	s, err := boltstore.OpenClock(path, clock)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range []string{"old", "new"} {
		if name == "new" {
			clock.Set(2 * time.Hour) // "old" ended two hours before "new"
		}
		g, err := s.Acquire(ctx, name, "h", tokens.Terms{TTL: time.Minute}, tokens.Caller{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, name, "h", g.Epoch, tokens.Caller{}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if s, err = boltstore.OpenClock(path, clock); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.ReclaimLeases(ctx, time.Hour, 10); err != nil || n != 1 {
		t.Fatalf("ReclaimLeases(1h) after a restart = %d, %v; want 1", n, err)
	}
	if _, err := s.Lease(ctx, "old"); !errors.Is(err, tokens.ErrLeaseNotFound) {
		t.Fatalf("the lease that ended 2h ago: %v, want reclaimed", err)
	}
	if _, err := s.Lease(ctx, "new"); err != nil {
		t.Fatalf("the lease that just ended: %v, want kept", err)
	}
}
