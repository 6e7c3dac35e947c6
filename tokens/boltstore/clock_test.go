package boltstore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/boltstore"
)

// TestWallClockJumpKeepsLeaseLife: a jump of the wall clock by an hour, back
// or forward, neither stretches a live grant past its TTL nor cuts it short
// (its life runs on the monotonic clock), while the expiry the store
// reports moves with the wall clock.
func TestWallClockJumpKeepsLeaseLife(t *testing.T) {
	clock := &tokens.OffsetClock{}
	s, err := boltstore.OpenClock(filepath.Join(t.TempDir(), "fencegw.db"), clock)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	terms := tokens.Terms{TTL: time.Second}
	back, err := s.Acquire(ctx, "back", "node-a", terms, tokens.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	clock.Set(-time.Hour)
	l, err := s.Lease(ctx, "back")
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(l.ExpiresAt); d > -59*time.Minute || d < -61*time.Minute {
		t.Errorf("after a jump back by an hour the reported expiry is %s from the host's time, want about -1h", d)
	}
	for {
		m, err := s.Mark(ctx, "back")
		if err != nil {
			t.Fatal(err)
		}
		if m.Lease.Left == 0 {
			break
		}
		if time.Since(start) > 1500*time.Millisecond {
			t.Fatalf("after a jump back by an hour the 1s grant at epoch %d still lives %s after the jump", back.Epoch, time.Since(start))
		}
		time.Sleep(10 * time.Millisecond)
	}

	clock.Set(0)
	if _, err := s.Acquire(ctx, "forward", "node-a", terms, tokens.Caller{}); err != nil {
		t.Fatal(err)
	}
	clock.Set(time.Hour)
	m, err := s.Mark(ctx, "forward")
	if err != nil {
		t.Fatal(err)
	}
	if m.Lease.Left < 500*time.Millisecond {
		t.Errorf("after a jump forward by an hour the fresh 1s grant has %s left, want most of its TTL", m.Lease.Left)
	}
	if _, err := s.Acquire(ctx, "forward", "node-b", terms, tokens.Caller{}); err == nil {
		t.Error("a jump forward by an hour let another holder take a live lease")
	}
}
