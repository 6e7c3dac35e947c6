package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencegw/fencegw/internal/testutil/testredis"
)

// The Redis epoch source in the plan: a durable redis-server (appendonly,
// fsync on every write) so that the epoch counter survives a SIGKILL, and
// leaders that follow the recipe of docs/epoch-sources.md: INCR key:epoch,
// SET key <epoch> NX PX, renew and release with check-and-set scripts.

// redisLockTTL is the leaders' PX.
const redisLockTTL = 1500 * time.Millisecond

// The leaders' check-and-set scripts, as docs/epoch-sources.md gives them.
const (
	redisRenew = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`
	redisRelease = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1]) end return 0`
)

// startRedisSource starts a durable redis-server; the route reads the
// default key fencegw:{resource}.
func startRedisSource(t *testing.T) *sourceEnv {
	srv := testredis.StartDurable(t)
	return &sourceEnv{
		route: sourceRoute{targets: []string{srv.Addr()}, resources: sourceResources(), yaml: func(addrs []string) string {
			return fmt.Sprintf("{kind: redis, address: %q}", addrs[0])
		}},
		ttl: redisLockTTL,
		elector: func(t *testing.T, holder string) elector {
			// Its own connections, each command bounded by its context.
			c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DisableIdentity: true,
				ContextTimeoutEnabled: true})
			t.Cleanup(func() { c.Close() })
			return &redisElector{c: c, ttlLock: ttlLock{ttl: redisLockTTL}}
		},
		pause: srv.Pause, resume: srv.Resume, kill: srv.Kill, restart: srv.Restart,
	}
}

// redisElector is a leader taking the lock of docs/epoch-sources.md.
type redisElector struct {
	c *redis.Client
	ttlLock

	key   string
	epoch int64
}

// redisCall bounds one command of a leader.
const redisCall = 500 * time.Millisecond

func (e *redisElector) campaign(resource string) (int64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), redisCall)
	defer cancel()
	e.key, e.unsure = "fencegw:"+resource, false
	epoch, err := e.c.Incr(ctx, e.key+":epoch").Result()
	if err != nil {
		return 0, false
	}
	ok, err := e.c.SetNX(ctx, e.key, epoch, e.ttl).Result()
	if err != nil || !ok {
		return 0, false // a SET of unknown outcome holds a lock nobody uses, until its PX
	}
	e.epoch, e.set = epoch, time.Now()
	return epoch, true
}

func (e *redisElector) renew() bool {
	ctx, cancel := context.WithTimeout(context.Background(), redisCall)
	defer cancel()
	n, err := e.c.Eval(ctx, redisRenew, []string{e.key}, e.epoch, e.ttl.Milliseconds()).Int()
	if err != nil {
		e.unsure = true
		return false
	}
	if n != 1 {
		return false
	}
	e.set = time.Now()
	return true
}

// resign releases the lock if it still holds the epoch. Either way the
// lock no longer holds it once the script answered, and never will again
// (a late renewal only extends a lock that holds the epoch).
func (e *redisElector) resign() time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), redisCall)
	defer cancel()
	if err := e.c.Eval(ctx, redisRelease, []string{e.key}, e.epoch).Err(); err == nil {
		return time.Now()
	}
	return e.expiry()
}

func (e *redisElector) close() {}
