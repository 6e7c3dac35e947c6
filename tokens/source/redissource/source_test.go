package redissource_test

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencegw/fencegw/internal/testutil/testredis"
	"github.com/fencegw/fencegw/tokens/source"
	"github.com/fencegw/fencegw/tokens/source/redissource"
	"github.com/fencegw/fencegw/tokens/source/sourcetest"
)

// TestLeaderRecipe drives the documented recipe: a held lock refuses a
// rival; renewal and release act only for the lock's own epoch; after a
// release or an expiry the next leader's epoch is higher.
func TestLeaderRecipe(t *testing.T) {
	srv := testredis.Start(t)
	c := srv.Client(t)
	s := open(t, redissource.Options{Address: srv.Addr()})
	ctx := sourcetest.Context(t, 30*time.Second)
	const r = "invoice-sweeper"
	key := "fencegw:" + r

	e1 := mustAcquire(t, c, key, 300*time.Millisecond)
	if e, err := acquire(ctx, c, key, time.Minute); err != nil || e != 0 {
		t.Fatalf("a rival acquired epoch %d (%v) while the lock is held", e, err)
	}
	if ok, err := renew(ctx, c, key, e1, time.Minute); err != nil || !ok {
		t.Fatalf("renew by the holder = %v, %v", ok, err)
	}
	time.Sleep(400 * time.Millisecond) // past the first PX, not the renewed one
	sourcetest.MustLeader(t, s, r, source.Leader{Held: true, Epoch: e1, Live: true})
	if ok, err := renew(ctx, c, key, e1-1, time.Minute); err != nil || ok {
		t.Fatalf("renew by a stale epoch = %v, %v", ok, err)
	}
	if ok, err := release(ctx, c, key, e1+1); err != nil || ok {
		t.Fatalf("release by another epoch = %v, %v", ok, err)
	}
	sourcetest.MustCheck(t, s, r, e1, sourcetest.Admit)
	if ok, err := release(ctx, c, key, e1); err != nil || !ok {
		t.Fatalf("release by the holder = %v, %v", ok, err)
	}
	sourcetest.MustLeader(t, s, r, source.Leader{})
	sourcetest.MustCheck(t, s, r, e1, sourcetest.NoLeader)

	e2 := mustAcquire(t, c, key, 100*time.Millisecond)
	if e2 <= e1 {
		t.Fatalf("epoch %d after %d", e2, e1)
	}
	sourcetest.MustCheck(t, s, r, e2, sourcetest.Admit)
	time.Sleep(200 * time.Millisecond) // the leader stopped renewing
	sourcetest.MustCheck(t, s, r, e2, sourcetest.NoLeader)
	if ok, err := renew(ctx, c, key, e2, time.Minute); err != nil || ok {
		t.Fatalf("renew of an expired lock = %v, %v", ok, err)
	}
	e3 := mustAcquire(t, c, key, time.Minute)
	sourcetest.MustCheck(t, s, r, e2, sourcetest.Superseded)
	sourcetest.MustCheck(t, s, r, e3, sourcetest.Admit)
}

// TestValues: a lock holding anything but an epoch fails closed, naming
// the key; a key of another type does too.
func TestValues(t *testing.T) {
	srv := testredis.Start(t)
	c := srv.Client(t)
	s := open(t, redissource.Options{Address: srv.Addr()})
	for _, v := range []string{"", "0", "-3", "+3", "07", " 7", "7 ", "7\n", "node-a", "1.5", "1e3",
		"9223372036854775808", strings.Repeat("9", 40), "\xff"} {
		set(t, c, "fencegw:bad", v)
		mustFail(t, s, "bad", redissource.ErrNotEpoch)
	}
	set(t, c, "fencegw:good", "9223372036854775807")
	sourcetest.MustLeader(t, s, "good", source.Leader{Held: true, Epoch: 9223372036854775807, Live: true})

	if err := c.HSet(sourcetest.Context(t, 10*time.Second), "fencegw:hash", "epoch", "7").Err(); err != nil {
		t.Fatalf("HSET: %v", err)
	}
	mustFail(t, s, "hash", nil)
	sourcetest.MustCheck(t, s, "good", 9223372036854775807, sourcetest.Admit) // still usable
}

// TestKeyTemplate: the key template places the resource; a template
// without the placeholder reads one lock for every resource; keys are
// used as written.
func TestKeyTemplate(t *testing.T) {
	srv := testredis.Start(t)
	c := srv.Client(t)
	set(t, c, "locks/jobs/leader", "4")
	set(t, c, "the-one-lock", "9")
	set(t, c, "fencegw:x' OR 1", "2")

	s := open(t, redissource.Options{Address: srv.Addr(), Key: "locks/{resource}/leader"})
	sourcetest.MustLeader(t, s, "jobs", source.Leader{Held: true, Epoch: 4, Live: true})
	sourcetest.MustLeader(t, s, "other", source.Leader{})

	one := open(t, redissource.Options{Address: srv.Addr(), Key: "the-one-lock"})
	sourcetest.MustLeader(t, one, "jobs", source.Leader{Held: true, Epoch: 9, Live: true})
	sourcetest.MustLeader(t, one, "anything", source.Leader{Held: true, Epoch: 9, Live: true})

	def := open(t, redissource.Options{Address: srv.Addr()})
	sourcetest.MustLeader(t, def, "x' OR 1", source.Leader{Held: true, Epoch: 2, Live: true})
	sourcetest.MustLeader(t, def, "jobs", source.Leader{})
}

// TestReplicaRefused: Open refuses a replica, and a server demoted to a
// replica after Open (whose stale lock would still be served) is refused
// on every read until it is a primary again.
func TestReplicaRefused(t *testing.T) {
	srv := testredis.Start(t)
	c := srv.Client(t)
	key := "fencegw:jobs"
	e := mustAcquire(t, c, key, time.Minute)
	s := open(t, redissource.Options{Address: srv.Addr()})
	sourcetest.MustCheck(t, s, "jobs", e, sourcetest.Admit)

	// A primary that does not exist: the replica keeps serving its data.
	nowhere := unreachable(t)
	host, port, _ := net.SplitHostPort(nowhere)
	ctx := sourcetest.Context(t, 10*time.Second)
	if err := c.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatalf("REPLICAOF: %v", err)
	}
	if v, err := c.Get(ctx, key).Result(); err != nil {
		t.Fatalf("the replica does not serve the lock: %v", err)
	} else {
		t.Logf("the replica serves %s = %s", key, v)
	}
	mustFail(t, s, "jobs", redissource.ErrNotPrimary)
	if s2, err := redissource.Open(ctx, redissource.Options{Address: srv.Addr()}); err == nil {
		s2.Close()
		t.Fatal("Open on a replica succeeded")
	} else if !errors.Is(err, redissource.ErrNotPrimary) || !strings.Contains(err.Error(), "replica") {
		t.Fatalf("Open on a replica = %v, want ErrNotPrimary", err)
	}

	if err := c.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatalf("REPLICAOF NO ONE: %v", err)
	}
	sourcetest.MustCheck(t, s, "jobs", e, sourcetest.Admit)
}

// unreachable returns a loopback host:port where nothing listened a moment
// ago.
func unreachable(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestURLAddress: a redis:// URL carries the user, the password and the
// database; a user limited to GET, PTTL and ROLE on the lock keys can
// read them.
func TestURLAddress(t *testing.T) {
	srv := testredis.Start(t)
	ctx := sourcetest.Context(t, 10*time.Second)
	set(t, srv.Client(t), "fencegw:jobs", "3")
	db2 := redis.NewClient(&redis.Options{Addr: srv.Addr(), DB: 2, DisableIdentity: true})
	defer db2.Close()
	set(t, db2, "fencegw:jobs", "5")
	if err := db2.ConfigSet(ctx, "requirepass", "s3cret-pw").Err(); err != nil {
		t.Fatalf("CONFIG SET requirepass: %v", err)
	}

	s := open(t, redissource.Options{Address: "redis://:s3cret-pw@" + srv.Addr() + "/2"})
	sourcetest.MustLeader(t, s, "jobs", source.Leader{Held: true, Epoch: 5, Live: true})
	s0 := open(t, redissource.Options{Address: "redis://default:s3cret-pw@" + srv.Addr()})
	sourcetest.MustLeader(t, s0, "jobs", source.Leader{Held: true, Epoch: 3, Live: true})

	// The least an ACL user needs: GET, PTTL and ROLE, on the lock keys.
	if err := db2.Do(ctx, "ACL", "SETUSER", "fencegw", "on", ">gw-pw", "~fencegw:*", "+get", "+pttl", "+role").Err(); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
	acl := open(t, redissource.Options{Address: "redis://fencegw:gw-pw@" + srv.Addr()})
	sourcetest.MustLeader(t, acl, "jobs", source.Leader{Held: true, Epoch: 3, Live: true})
	mustFail(t, open(t, redissource.Options{Address: "redis://fencegw:gw-pw@" + srv.Addr(), Key: "other:{resource}"}), "jobs", nil)

	_, err := redissource.Open(ctx, redissource.Options{Address: "redis://:wrong-pw@" + srv.Addr() + "/2"})
	if err == nil {
		t.Fatal("Open with a wrong password succeeded")
	}
	if strings.Contains(err.Error(), "wrong-pw") {
		t.Fatalf("Open error %q leaks the password", err)
	}
	t.Logf("wrong password: %v", err)
}

// TestOpenErrors: an address that cannot be used fails Open at once,
// never repeating a password.
func TestOpenErrors(t *testing.T) {
	for _, tc := range []struct{ address, want string }{
		{"", "address is empty"},
		{"localhost", "want host:port"},
		{":6379", "no host"},
		{"db:0", "port"},
		{"db:99999", "port"},
		{"unix:///run/redis.sock", "scheme"},
		{"http://db:6379", "scheme"},
		{"redis://:topsecret@db:6379/x", "database"},
		{"redis://:topsecret@db:6379/0?nope=1", "nope"},
		{"redis://:topsecret@[::1/0", "not a valid URL"},
		{"redis:///0", "no host"},
	} {
		s, err := redissource.Open(sourcetest.Context(t, 10*time.Second), redissource.Options{Address: tc.address})
		if err == nil {
			s.Close()
			t.Fatalf("Open(%q) succeeded", tc.address)
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "redissource: ") {
			t.Fatalf("Open(%q) = %q, want it to mention %q", tc.address, err, tc.want)
		}
		if strings.Contains(err.Error(), "topsecret") {
			t.Fatalf("Open(%q) = %q leaks the password", tc.address, err)
		}
	}
	start := time.Now()
	if s, err := redissource.Open(sourcetest.Context(t, 3*time.Second), redissource.Options{Address: unreachable(t)}); err == nil {
		s.Close()
		t.Fatal("Open of an unreachable server succeeded")
	} else {
		t.Logf("unreachable: %v (after %v)", err, time.Since(start))
	}
}
