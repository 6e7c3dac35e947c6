package redissource

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/fencegw/fencegw/tokens/source"
)

// ErrNotPrimary is wrapped by the errors of Open and Current when the
// server is not a primary (ROLE says replica or sentinel): a replica may
// lag behind a takeover and admit a superseded epoch.
var ErrNotPrimary = errors.New("not a Redis primary")

// ErrNoExpiry is wrapped by the error Current returns when the lock key
// holds an epoch but has no expiry (PTTL -1): the recipe's SET ... PX
// always gives the lock one, so such a key is something else (the INCR
// counter, or a lock taken without PX that would never lapse).
var ErrNoExpiry = errors.New("key has no expiry")

// Source reads leaders from Redis locks. It implements source.Source and is
// safe for concurrent use. Create it with Open.
type Source struct {
	client *redis.Client
	opts   Options // after WithDefaults
	addr   string  // host:port, for messages (never the URL: it may hold a password)

	closer source.Closer
}

var _ source.Source = (*Source)(nil)

// Open refuses a key template ending in CounterSuffix (ErrKeyCollision),
// parses o.Address (see ParseAddress), connects, and checks with ROLE
// that the server is a primary, so that a bad address, a replica or a
// Sentinel fails here with an error naming the field, not on the first
// request. It fails when the server cannot be reached within ctx.
//
// The client bounds every command by its context, sends no CLIENT SETINFO,
// and takes no maintenance notifications (which could move its
// connections to another endpoint): it talks to the server it was given.
// Unless the address's query says otherwise (max_retries), a read is
// retried once, on a fresh connection, when its connection broke, and a
// connection is dialled once per attempt: a server that is down fails the
// read with its own error, at once, rather than when the context ends.
// go-redis's log lines, which go to one logger for the whole process, are
// discarded: failures reach the caller as errors.
func Open(ctx context.Context, o Options) (*Source, error) {
	o = o.WithDefaults()
	if err := o.checkKey(); err != nil {
		return nil, fmt.Errorf("redissource: %w", err)
	}
	ro, err := ParseAddress(o.Address)
	if err != nil {
		return nil, fmt.Errorf("redissource: %w", err)
	}
	ro.ContextTimeoutEnabled = true
	ro.DisableIdentity = true
	ro.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	if ro.MaxRetries == 0 {
		ro.MaxRetries = 1
	}
	ro.DialerRetries = 1
	logging.Disable()
	s := &Source{client: redis.NewClient(ro), opts: o, addr: ro.Addr}
	if err := s.checkPrimary(ctx); err != nil {
		s.client.Close()
		return nil, fmt.Errorf("redissource: %w", err)
	}
	return s, nil
}

// checkPrimary runs ROLE and fails unless the server is a primary.
func (s *Source) checkPrimary(ctx context.Context) error {
	role := s.client.Do(ctx, "ROLE")
	return s.primary(role)
}

// primary interprets a ROLE reply: nil for a primary ("master"), an error
// wrapping ErrNotPrimary for a replica or a Sentinel, the command's error
// otherwise.
func (s *Source) primary(role *redis.Cmd) error {
	reply, err := role.Slice()
	if err != nil {
		return fmt.Errorf("ROLE on %s: %w", s.addr, err)
	}
	if len(reply) == 0 {
		return fmt.Errorf("ROLE on %s: empty reply", s.addr)
	}
	switch r, _ := reply[0].(string); r {
	case "master":
		return nil
	case "slave", "replica":
		return fmt.Errorf("%s is a replica: point the address at the primary: %w", s.addr, ErrNotPrimary)
	case "sentinel":
		return fmt.Errorf("%s is a Sentinel: point the address at the primary it monitors: %w", s.addr, ErrNotPrimary)
	default:
		return fmt.Errorf("%s has role %q: %w", s.addr, r, ErrNotPrimary)
	}
}

// Current reads the leader of resource: the lock key Options.KeyFor
// (resource) names, read from the primary with ROLE, GET and PTTL sent
// together on one connection, so that a server demoted to a replica since
// Open is refused on the very read.
//
// A missing key (never taken, released, or expired on the server's clock)
// gives source.Leader{} (no leader). A key holding an epoch with an expiry
// gives Leader{Held: true, Epoch: epoch, Live: true}: Redis deletes the key
// when its PX expires, so a key that exists is live. A key the read finds
// gone at its PTTL (it expired or was released after GET) is no leader.
// Holder is always "": the value is the epoch alone.
//
// Errors, all wrapping a *tokens.UnavailableError (the caller must fail
// closed; after Close they also wrap source.ErrClosed):
//   - a resource whose lock key would end in ":epoch", the suffix of the
//     recipe's counter keys, wraps ErrKeyCollision, before any read;
//   - a value that is not an epoch (text, zero, a sign, a leading zero,
//     beyond an int64) wraps ErrNotEpoch, a key of another type Redis's
//     WRONGTYPE;
//   - an epoch in a key without an expiry (PTTL -1) wraps ErrNoExpiry:
//     the recipe's lock always has one, and a key without one (the
//     counter, or a lock set without PX) is not a lock this source trusts.
func (s *Source) Current(ctx context.Context, resource string) (source.Leader, error) {
	return source.ReadLeader(ctx, resource, s.current)
}

func (s *Source) current(ctx context.Context, resource string) (source.Leader, error) {
	if s.closer.Closed() {
		return source.Leader{}, fmt.Errorf("redissource: %w", source.ErrClosed)
	}
	key, err := s.opts.lockKey(resource)
	if err != nil {
		return source.Leader{}, fmt.Errorf("redissource: %w", err)
	}
	role, get, pttl, err := s.read(ctx, key)
	if err != nil {
		return source.Leader{}, err
	}
	if err := s.primary(role); err != nil {
		return source.Leader{}, fmt.Errorf("redissource: read lock %q: %w", key, err)
	}
	v, err := get.Result()
	if errors.Is(err, redis.Nil) {
		return source.Leader{}, nil
	}
	if err != nil {
		return source.Leader{}, fmt.Errorf("redissource: read lock %q on %s: %w", key, s.addr, err)
	}
	epoch, err := parseEpoch(v)
	if err != nil {
		return source.Leader{}, fmt.Errorf("redissource: lock %q on %s holds no epoch (the value must be the epoch from INCR, in decimal): %w", key, s.addr, err)
	}
	return s.leader(key, epoch, pttl)
}

// read sends ROLE, GET key and PTTL key in one pipeline.
func (s *Source) read(ctx context.Context, key string) (*redis.Cmd, *redis.StringCmd, *redis.DurationCmd, error) {
	var role *redis.Cmd
	var get *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		role = p.Do(ctx, "ROLE")
		get = p.Get(ctx, key)
		pttl = p.PTTL(ctx, key)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		if s.closer.Closed() {
			err = fmt.Errorf("%w: %w", source.ErrClosed, err)
		}
		return nil, nil, nil, fmt.Errorf("redissource: read lock %q on %s: %w", key, s.addr, err)
	}
	return role, get, pttl, nil
}

// leader interprets the PTTL read after GET found epoch in key: a
// remaining TTL (0 or more) is a live lock; -2 (the key is gone) is no leader; -1 (no expiry)
// fails with ErrNoExpiry.
func (s *Source) leader(key string, epoch int64, pttl *redis.DurationCmd) (source.Leader, error) {
	d, err := pttl.Result()
	if err != nil {
		return source.Leader{}, fmt.Errorf("redissource: PTTL of lock %q on %s: %w", key, s.addr, err)
	}
	switch {
	case d == -2:
		return source.Leader{}, nil
	case d < 0:
		return source.Leader{}, fmt.Errorf("redissource: key %q on %s holds %d but has no expiry, so it is no lock the recipe takes (SET key epoch NX PX ttl): %w", key, s.addr, epoch, ErrNoExpiry)
	}
	return source.Leader{Held: true, Epoch: epoch, Live: true}, nil
}

// Close closes the client: reads in flight fail, and Current then fails
// with source.ErrClosed. It may be called more than once and returns the
// first call's error.
func (s *Source) Close() error {
	return s.closer.Close(s.client.Close)
}
