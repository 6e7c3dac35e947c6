package etcdstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/etcdstore"
)

// TestWallClockJump: a jump of the store's wall clock by an hour, forward
// or back, moves the expiry it reports, never the life it gives the fence
// (Mark's Left), which is etcd's TTL measured on the monotonic clock: a
// life computed from the wall clock would let a lapsed write through for
// the length of the jump.
func TestWallClockJump(t *testing.T) {
	c := testetcd.Start(t, 1)
	ctx := context.Background()
	clock := &tokens.OffsetClock{}
	s, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: c.Endpoints(), Prefix: "/clock/", Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	terms := tokens.Terms{TTL: 2 * time.Second}
	for _, jump := range []time.Duration{time.Hour, -time.Hour} {
		name := "jump" + jump.String()
		clock.Set(0)
		if _, err := s.Acquire(ctx, name, "node-a", terms, tokens.Caller{}); err != nil {
			t.Fatal(err)
		}
		clock.Set(jump)
		m, err := s.Mark(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if m.Lease.Left <= 0 || m.Lease.Left > terms.TTL {
			t.Errorf("jump %s: Mark's Left = %s, want within the 2s TTL", jump, m.Lease.Left)
		}
		l, err := s.Lease(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Until(l.ExpiresAt) - jump; d < -time.Minute || d > time.Minute {
			t.Errorf("jump %s: the reported expiry is %s from the host's time, want the jump plus at most the TTL", jump, time.Until(l.ExpiresAt))
		}
	}
}
