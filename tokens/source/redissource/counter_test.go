package redissource_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testredis"
	"github.com/fencegw/fencegw/tokens/source"
	"github.com/fencegw/fencegw/tokens/source/redissource"
	"github.com/fencegw/fencegw/tokens/source/sourcetest"
)

// TestCounterIsNoLock: the red team's key injection. With the template
// "fencegw:{resource}", the resource "t-acme:epoch" names the counter key
// of the resource "t-acme", which holds an epoch with no expiry; it fails
// closed (ErrKeyCollision) rather than admit the counter's value, and so
// does any key holding an epoch without an expiry (ErrNoExpiry), while the
// recipe's lock, with its PX, still leads.
func TestCounterIsNoLock(t *testing.T) {
	srv := testredis.Start(t)
	c := srv.Client(t)
	s := open(t, redissource.Options{Address: srv.Addr()})
	ctx := sourcetest.Context(t, 10*time.Second)

	e, err := c.Incr(ctx, "fencegw:t-acme:epoch").Result() // a leader drew an epoch, took no lock
	if err != nil {
		t.Fatalf("INCR: %v", err)
	}
	mustFail(t, s, "t-acme:epoch", redissource.ErrKeyCollision)
	sourcetest.MustCheck(t, s, "t-acme", e, sourcetest.NoLeader)

	setTTL(t, c, "fencegw:forever", "5", 0) // a lock taken without PX
	mustFail(t, s, "forever", redissource.ErrNoExpiry)

	acquired := mustAcquire(t, c, "fencegw:t-acme", time.Minute)
	sourcetest.MustLeader(t, s, "t-acme", source.Leader{Held: true, Epoch: acquired, Live: true})
	mustFail(t, s, "t-acme:epoch", redissource.ErrKeyCollision)

	one := open(t, redissource.Options{Address: srv.Addr(), Key: "locks:{resource}:epoch:lock"})
	sourcetest.MustLeader(t, one, "x:epoch", source.Leader{}) // "...:lock" is never a counter
}

// TestOpenRefusesCounterTemplate: a key template whose every lock key ends
// in ":epoch" is refused by Open, naming the collision.
func TestOpenRefusesCounterTemplate(t *testing.T) {
	srv := testredis.Start(t)
	for _, k := range []string{"fencegw:{resource}:epoch", "the-one:epoch"} {
		s, err := redissource.Open(context.Background(), redissource.Options{Address: srv.Addr(), Key: k})
		if err == nil {
			s.Close()
			t.Fatalf("Open(key %q) succeeded", k)
		}
		if !errors.Is(err, redissource.ErrKeyCollision) {
			t.Fatalf("Open(key %q) = %v, want ErrKeyCollision", k, err)
		}
	}
}
