package redissource_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencegw/fencegw/internal/testutil/testredis"
	"github.com/fencegw/fencegw/tokens/source"
	"github.com/fencegw/fencegw/tokens/source/redissource"
	"github.com/fencegw/fencegw/tokens/source/sourcetest"
)

// The leader's side of the lock, as docs/epoch-sources.md gives it: the
// team's own service runs these, never fencegw.

// renewScript extends the lock only while it holds the caller's epoch.
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)

// releaseScript deletes the lock only while it holds the caller's epoch.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)

// acquire takes the lock key with a new epoch from INCR key:epoch, for
// ttl; it returns 0 when another holds the lock. (An epoch drawn by a
// failed attempt is never used: the next one is higher.)
func acquire(ctx context.Context, c *redis.Client, key string, ttl time.Duration) (int64, error) {
	epoch, err := c.Incr(ctx, key+":epoch").Result()
	if err != nil {
		return 0, err
	}
	ok, err := c.SetNX(ctx, key, epoch, ttl).Result()
	if err != nil || !ok {
		return 0, err
	}
	return epoch, nil
}

// renew extends the lock for ttl if it still holds epoch.
func renew(ctx context.Context, c *redis.Client, key string, epoch int64, ttl time.Duration) (bool, error) {
	n, err := renewScript.Run(ctx, c, []string{key}, epoch, ttl.Milliseconds()).Int()
	return n == 1, err
}

// release deletes the lock if it still holds epoch.
func release(ctx context.Context, c *redis.Client, key string, epoch int64) (bool, error) {
	n, err := releaseScript.Run(ctx, c, []string{key}, epoch).Int()
	return n == 1, err
}

// mustAcquire takes resource's default lock for ttl or fails t.
func mustAcquire(t *testing.T, c *redis.Client, key string, ttl time.Duration) int64 {
	t.Helper()
	e, err := acquire(sourcetest.Context(t, 10*time.Second), c, key, ttl)
	if err != nil {
		t.Fatalf("acquire %s: %v", key, err)
	}
	if e == 0 {
		t.Fatalf("acquire %s: the lock is held", key)
	}
	return e
}

// election drives locks under the default key template with the leader's
// recipe, from a client of its own.
type election struct{ c *redis.Client }

// Acquire takes the lock for 60 s.
func (e election) Acquire(t *testing.T, resource, _ string) int64 {
	t.Helper()
	return mustAcquire(t, e.c, redissource.Options{}.KeyFor(resource), time.Minute)
}

// Lapse does what the lock's expiry does when its leader stops renewing it,
// without waiting for its TTL: the key's PX runs out on the server's clock.
func (e election) Lapse(t *testing.T, resource string) {
	t.Helper()
	key := redissource.Options{}.KeyFor(resource)
	ctx := sourcetest.Context(t, 10*time.Second)
	if ok, err := e.c.PExpire(ctx, key, time.Millisecond).Result(); err != nil || !ok {
		t.Fatalf("PEXPIRE %s 1 = %v, %v", key, ok, err)
	}
	for {
		if n, err := e.c.Exists(ctx, key).Result(); err != nil {
			t.Fatalf("EXISTS %s: %v", key, err)
		} else if n == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// backend reads and takes locks on srv.
func backend(t *testing.T, srv *testredis.Server) *sourcetest.Backend {
	return &sourcetest.Backend{
		Open: func(ctx context.Context) (source.Source, error) {
			return redissource.Open(ctx, redissource.Options{Address: srv.Addr()})
		},
		Election: election{srv.Client(t)},
	}
}

// open opens a Source, closed when t ends.
func open(t *testing.T, o redissource.Options) *redissource.Source {
	t.Helper()
	s, err := redissource.Open(sourcetest.Context(t, 10*time.Second), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// set stores value at key for a minute, as the recipe's lock, or fails t.
func set(t *testing.T, c *redis.Client, key string, value any) {
	t.Helper()
	setTTL(t, c, key, value, time.Minute)
}

// setTTL stores value at key for ttl (0: no expiry), or fails t.
func setTTL(t *testing.T, c *redis.Client, key string, value any, ttl time.Duration) {
	t.Helper()
	if err := c.Set(sourcetest.Context(t, 10*time.Second), key, value, ttl).Err(); err != nil {
		t.Fatalf("SET %s: %v", key, err)
	}
}

// mustFail fails t unless reading resource from s fails closed with an
// error wrapping want.
func mustFail(t *testing.T, s source.Source, resource string, want error) {
	t.Helper()
	l, err := s.Current(sourcetest.Context(t, 10*time.Second), resource)
	if err == nil {
		t.Fatalf("Current(%q) = %+v, want an error", resource, l)
	}
	sourcetest.MustUnavailable(t, "Current("+strconv.Quote(resource)+")", err)
	if want != nil && !errors.Is(err, want) {
		t.Fatalf("Current(%q) = %v, want it to wrap %v", resource, err, want)
	}
	t.Logf("Current(%q): %v", resource, err)
}
