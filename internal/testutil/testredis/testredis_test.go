package testredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testredis"
)

// TestStopRestart: data written before Stop is there after Restart, TTLs
// included, on the same address; while stopped the server refuses
// connections.
func TestStopRestart(t *testing.T) {
	s := testredis.Start(t)
	c := s.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Set(ctx, "k", "7", time.Minute).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	s.Stop()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING succeeded with the server stopped")
	}
	s.Stop() // a no-op
	s.Restart()
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "7" {
		t.Fatalf("GET after Restart = %q, %v; want 7", v, err)
	}
	if ttl, err := c.PTTL(ctx, "k").Result(); err != nil || ttl <= 0 || ttl > time.Minute {
		t.Fatalf("PTTL after Restart = %v, %v", ttl, err)
	}
	s.Restart() // from running
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after a second Restart: %v", err)
	}
}

// TestServersAreSeparate: two servers of one test have their own ports and
// data.
func TestServersAreSeparate(t *testing.T) {
	a, b := testredis.Start(t), testredis.Start(t)
	if a.Addr() == b.Addr() {
		t.Fatalf("both servers on %s", a.Addr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Client(t).Set(ctx, "k", "a", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if n, err := b.Client(t).Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS on the other server = %d, %v", n, err)
	}
}

// TestDurableKill: on a durable server, an acknowledged INCR survives a
// SIGKILL and Restart; a paused server answers nothing until resumed.
func TestDurableKill(t *testing.T) {
	s := testredis.StartDurable(t)
	c := s.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 3 {
		if err := c.Incr(ctx, "n").Err(); err != nil {
			t.Fatalf("INCR: %v", err)
		}
	}
	s.Pause()
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	err := c.Ping(short).Err()
	cancelShort()
	if err == nil {
		t.Fatal("PING answered by a paused server")
	}
	s.Resume()
	s.Kill()
	s.Restart()
	if v, err := c.Get(ctx, "n").Int(); err != nil || v != 3 {
		t.Fatalf("GET after Kill and Restart = %d, %v; want 3", v, err)
	}
}
