package etcdstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/etcdstore"
	"github.com/fencegw/fencegw/tokens/storetest"
)

func mustAcquire(t *testing.T, s tokens.Store, name, holder string, ttl time.Duration) tokens.Grant {
	t.Helper()
	g, err := s.Acquire(timeout(t, 10*time.Second), name, holder, tokens.Terms{TTL: ttl}, tokens.Caller{})
	if err != nil || !g.Held || g.Holder != holder || g.TTL != ttl {
		t.Fatalf("Acquire(%q, %q, %v) = %+v, %v", name, holder, ttl, g.Lease, err)
	}
	return g
}

func mustRenew(t *testing.T, s tokens.Store, name, holder string, epoch int64) {
	t.Helper()
	l, err := s.Renew(timeout(t, 10*time.Second), name, holder, epoch, tokens.Caller{})
	if err != nil || !l.Held || l.Holder != holder || l.Epoch != epoch {
		t.Fatalf("Renew(%q, %q, %d) = %+v, %v", name, holder, epoch, l, err)
	}
}

func mustHold(t *testing.T, s tokens.Store, name, holder string, epoch int64) {
	t.Helper()
	l, err := s.Lease(timeout(t, 10*time.Second), name)
	if err != nil || !l.Held || l.Holder != holder || l.Epoch != epoch {
		t.Fatalf("Lease(%q) = %+v, %v; want held by %q at epoch %d", name, l, err, holder, epoch)
	}
}

// TestLeaseKeys checks the documented key layout, the etcd lease behind the
// alive key and its TTL rounding, and that lease keys and HWM keys of
// look-alike names stay apart.
func TestLeaseKeys(t *testing.T) {
	c := testetcd.Start(t, 1)
	cli := c.Client(t)
	const prefix = "/layout/"
	s := open(t, c, prefix)

	get := func(key string) (string, int64, bool) {
		t.Helper()
		resp, err := cli.Get(timeout(t, 5*time.Second), key)
		if err != nil {
			t.Fatalf("raw Get(%q): %v", key, err)
		}
		if len(resp.Kvs) == 0 {
			return "", 0, false
		}
		return string(resp.Kvs[0].Value), resp.Kvs[0].Lease, true
	}

	// An HWM of resources whose names look like lease sub-prefixes.
	mustAdvance(t, s, "lease/job", 50)
	mustAdvance(t, s, "issued/job", 60)

	g := mustAcquire(t, s, "job", "node-a", 2*time.Second)
	if g.Epoch != 1 {
		t.Fatalf("first grant epoch %d", g.Epoch)
	}
	if v, _, ok := get(prefix + "job"); !ok || v != "1" {
		t.Fatalf("HWM key = %q, %v", v, ok)
	}
	if v, _, ok := get(prefix + "\x00issued/job"); !ok || v != "1" {
		t.Fatalf("issued key = %q, %v", v, ok)
	}
	raw, leaseOnRecord, ok := get(prefix + "\x00lease/job")
	if !ok || leaseOnRecord != 0 {
		t.Fatalf("lease record: present %v, attached to lease %x", ok, leaseOnRecord)
	}
	// The record is the documented JSON; only the etcd lease and the time
	// of the grant are not known in advance.
	var rec struct {
		EtcdLease int64  `json:"etcd_lease"`
		GrantedAt string `json:"granted_at"`
	}
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		t.Fatalf("lease record %q: %v", raw, err)
	}
	want := fmt.Sprintf(`{"holder":"node-a","epoch":1,"ttl_ms":2000,"etcd_lease":%d,"etcd_ttl_s":2,"granted_at":%q}`, rec.EtcdLease, rec.GrantedAt)
	if rec.EtcdLease == 0 || rec.GrantedAt == "" || raw != want {
		t.Fatalf("lease record = %s, want %s with an etcd lease and a grant time", raw, want)
	}
	alive, aliveLease, ok := get(prefix + "\x00alive/job")
	if !ok || alive != `{"holder":"node-a","epoch":1}` || aliveLease != rec.EtcdLease {
		t.Fatalf("alive key = %q on lease %x (present %v), record names lease %x", alive, aliveLease, ok, rec.EtcdLease)
	}
	// 2s is granted as a 2s etcd lease: exactly (other TTLs are refused).
	ttl, err := cli.TimeToLive(timeout(t, 5*time.Second), clientv3.LeaseID(rec.EtcdLease))
	if err != nil || ttl.GrantedTTL != 2 {
		t.Fatalf("TimeToLive of the grant's etcd lease = %+v, %v; want granted TTL 2", ttl, err)
	}
	// Look-alike resources kept their HWMs.
	mustCurrent(t, s, "lease/job", 50)
	mustCurrent(t, s, "issued/job", 60)

	// Re-acquiring moves the alive key to a new etcd lease and revokes the
	// old one.
	g2 := mustAcquire(t, s, "job", "node-a", 30*time.Second)
	if g2.Epoch != 2 || g2.Previous == nil || !g2.Previous.Held || g2.Previous.Epoch != 1 {
		t.Fatalf("re-acquire = %+v, previous %+v", g2.Lease, g2.Previous)
	}
	if ttl, err := cli.TimeToLive(timeout(t, 5*time.Second), clientv3.LeaseID(rec.EtcdLease)); err == nil && ttl.TTL > 0 {
		t.Fatalf("old etcd lease still live after re-acquire: %+v", ttl)
	}
	_, aliveLease, ok = get(prefix + "\x00alive/job")
	if !ok || aliveLease == rec.EtcdLease || aliveLease == 0 {
		t.Fatalf("alive key after re-acquire: present %v, lease %x", ok, aliveLease)
	}

	// Release deletes the alive key only.
	if err := s.Release(timeout(t, 5*time.Second), "job", "node-a", g2.Epoch, tokens.Caller{}); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if _, _, ok := get(prefix + "\x00alive/job"); ok {
		t.Fatal("alive key survived release")
	}
	for _, k := range []string{"job", "\x00issued/job", "\x00lease/job"} {
		if _, _, ok := get(prefix + k); !ok {
			t.Fatalf("key %q deleted by release", prefix+k)
		}
	}
	l, err := s.Lease(timeout(t, 5*time.Second), "job")
	if err != nil || l.Held || l.Epoch != 2 || l.Holder != "node-a" || l.TTL != 30*time.Second {
		t.Fatalf("Lease after release = %+v, %v", l, err)
	}
}

// TestLeaseCorrupt: a lease, alive or issued key holding something the store
// did not write fails every operation that reads it as unavailable, wrapping
// ErrCorruptValue, and is left as it is.
func TestLeaseCorrupt(t *testing.T) {
	c := testetcd.Start(t, 1)
	cli := c.Client(t)
	const prefix = "/corrupt/"
	s := open(t, c, prefix)
	put := func(key, v string, opts ...clientv3.OpOption) {
		t.Helper()
		if _, err := cli.Put(timeout(t, 5*time.Second), prefix+key, v, opts...); err != nil {
			t.Fatalf("raw Put: %v", err)
		}
	}
	check := func(what, name string) {
		t.Helper()
		ops := map[string]func(ctx context.Context) error{
			"acquire": func(ctx context.Context) error {
				_, err := s.Acquire(ctx, name, "node-b", tokens.Terms{TTL: 5 * time.Second}, tokens.Caller{})
				return err
			},
			"renew": func(ctx context.Context) error {
				_, err := s.Renew(ctx, name, "node-a", 1, tokens.Caller{})
				return err
			},
			"release": func(ctx context.Context) error { return s.Release(ctx, name, "node-a", 1, tokens.Caller{}) },
			"lease": func(ctx context.Context) error {
				_, err := s.Lease(ctx, name)
				return err
			},
		}
		for op, call := range ops {
			err := call(timeout(t, 5*time.Second))
			mustBeUnavailable(t, what+": "+op, err, op)
			if !errors.Is(err, etcdstore.ErrCorruptValue) {
				t.Errorf("%s: %s = %v, want ErrCorruptValue", what, op, err)
			}
		}
	}

	for i, bad := range []string{"", "{", "null", "[]", `{"holder":"node-a"}`,
		`{"holder":"","epoch":1,"ttl_ms":5000,"etcd_lease":7}`,
		`{"holder":"node-a","epoch":0,"ttl_ms":5000,"etcd_lease":7}`,
		`{"holder":"node-a","epoch":1,"ttl_ms":5,"etcd_lease":7}`,
		`{"holder":"node-a","epoch":1,"ttl_ms":5000,"etcd_lease":0}`,
		`{"holder":"node-a","epoch":"1","ttl_ms":5000,"etcd_lease":7}`,
	} {
		name := fmt.Sprintf("rec-%d", i)
		put("\x00lease/"+name, bad)
		check(fmt.Sprintf("record %q", bad), name)
	}

	// An alive key that disagrees with the record, or that exists without
	// one.
	g := mustAcquire(t, s, "mismatch", "node-a", 30*time.Second)
	lease, err := cli.Grant(timeout(t, 5*time.Second), 30)
	if err != nil {
		t.Fatal(err)
	}
	put("\x00alive/mismatch", fmt.Sprintf(`{"holder":"node-a","epoch":%d}`, g.Epoch), clientv3.WithLease(lease.ID))
	check("alive key on another etcd lease", "mismatch")
	put("\x00alive/mismatch", fmt.Sprintf(`{"holder":"node-x","epoch":%d}`, g.Epoch), clientv3.WithLease(lease.ID))
	check("alive key naming another holder", "mismatch")
	put("\x00alive/orphan", `{"holder":"node-a","epoch":1}`, clientv3.WithLease(lease.ID))
	check("alive key without record", "orphan")

	// A corrupt issued key fails acquire and advance.
	put("\x00issued/iss", "ten")
	_, err = s.Acquire(timeout(t, 5*time.Second), "iss", "node-a", tokens.Terms{TTL: 5 * time.Second}, tokens.Caller{})
	mustBeUnavailable(t, "Acquire over corrupt issued", err, "acquire")
	_, err = s.Advance(timeout(t, 5*time.Second), "iss", 3)
	mustBeUnavailable(t, "Advance over corrupt issued", err, "advance")
	if !errors.Is(err, etcdstore.ErrCorruptValue) {
		t.Errorf("Advance over corrupt issued = %v, want ErrCorruptValue", err)
	}
	resp, err := cli.Get(timeout(t, 5*time.Second), prefix+"\x00issued/iss")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "ten" {
		t.Fatalf("corrupt issued key rewritten: %v, %v", resp, err)
	}
}

// TestGrantsAndAdvancesInterleave: raw advances racing grants of the same
// name never raise the HWM above the highest epoch issued once a lease was
// granted, and every grant raises the HWM.
func TestGrantsAndAdvancesInterleave(t *testing.T) {
	c := testetcd.Start(t, 1)
	s := open(t, c, "/interleave/")
	mustAdvance(t, s, "mixed", 10)

	const grants, advancers = 15, 4
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		last tokens.Grant
	)
	errc := make(chan error, grants+advancers)
	stop := make(chan struct{})
	wg.Go(func() {
		defer close(stop)
		for range grants {
			g, err := s.Acquire(timeout(t, 10*time.Second), "mixed", "node-a", tokens.Terms{TTL: 30 * time.Second}, tokens.Caller{})
			if err != nil {
				errc <- fmt.Errorf("Acquire: %w", err)
				return
			}
			mu.Lock()
			if g.Epoch <= last.Epoch {
				errc <- fmt.Errorf("grant epoch %d after %d", g.Epoch, last.Epoch)
			}
			last = g
			mu.Unlock()
		}
	})
	for range advancers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx := timeout(t, 10*time.Second)
				cur, err := s.Current(ctx, "mixed")
				if err != nil {
					errc <- err
					return
				}
				_, err = s.Advance(ctx, "mixed", cur+1)
				var stale *tokens.StaleEpochError
				var notIssued *tokens.EpochNotIssuedError
				if err != nil && !errors.As(err, &stale) && !errors.As(err, &notIssued) {
					errc <- fmt.Errorf("Advance(%d): %w", cur+1, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	mustCurrent(t, s, "mixed", last.Epoch)
	_, err := s.Advance(timeout(t, 5*time.Second), "mixed", last.Epoch+1)
	var notIssued *tokens.EpochNotIssuedError
	if !errors.As(err, &notIssued) || notIssued.Issued != last.Epoch {
		t.Fatalf("Advance above the last grant = %v", err)
	}
}

// TestLeaseLeaderDown: with the etcd leader stopped, the remaining two
// members keep the lease: its holder renews it, another holder is refused,
// a released lease goes to another holder at a higher epoch and a lapsed one
// is taken over once etcd expires it.
func TestLeaseLeaderDown(t *testing.T) {
	c := testetcd.Start(t, 3)
	s := open(t, c, "")
	other := open(t, c, "") // another replica, its own client
	g := mustAcquire(t, s, "job", "node-a", 30*time.Second)
	short := mustAcquire(t, s, "short", "node-a", s.MinLeaseTTL())

	down := leader(t, c)
	c.StopMember(down)

	mustRenew(t, s, "job", "node-a", g.Epoch)
	mustRenew(t, other, "job", "node-a", g.Epoch)
	_, err := other.Acquire(timeout(t, 10*time.Second), "job", "node-b", tokens.Terms{TTL: 30 * time.Second}, tokens.Caller{})
	storetest.MustBeHeld(t, err, "node-a", g.Epoch)
	mustHold(t, other, "job", "node-a", g.Epoch)
	_, err = other.Advance(timeout(t, 10*time.Second), "job", g.Epoch+1)
	if !errors.As(err, new(*tokens.EpochNotIssuedError)) {
		t.Fatalf("Advance above the grant = %v, want *EpochNotIssuedError", err)
	}

	if err := s.Release(timeout(t, 10*time.Second), "job", "node-a", g.Epoch, tokens.Caller{}); err != nil {
		t.Fatalf("Release: %v", err)
	}
	b := mustAcquire(t, other, "job", "node-b", 30*time.Second)
	if b.Epoch != g.Epoch+1 || b.Previous == nil || b.Previous.Holder != "node-a" || b.Previous.Held {
		t.Fatalf("acquire after release = %+v, previous %+v", b.Lease, b.Previous)
	}
	mustBeStale(t, s, "job", g.Epoch, b.Epoch)
	storetest.MustBeLost(t, s.Release(timeout(t, 10*time.Second), "job", "node-a", g.Epoch, tokens.Caller{}))

	// The short lease lapses (a new leader extends it by up to its TTL plus an
	// election timeout first); node-b then takes it over.
	deadline := time.Now().Add(20 * time.Second)
	var takeover tokens.Grant
	for {
		takeover, err = other.Acquire(timeout(t, 10*time.Second), "short", "node-b", tokens.Terms{TTL: 30 * time.Second}, tokens.Caller{})
		if err == nil {
			break
		}
		var held *tokens.LeaseHeldError
		if !errors.As(err, &held) || time.Now().After(deadline) {
			t.Fatalf("takeover of the lapsed lease: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if takeover.Epoch != short.Epoch+1 {
		t.Fatalf("takeover epoch %d, want %d", takeover.Epoch, short.Epoch+1)
	}
	_, err = s.Renew(timeout(t, 10*time.Second), "short", "node-a", short.Epoch, tokens.Caller{})
	storetest.MustBeLost(t, err)

	c.RestartMember(down)
	mustRenew(t, s, "job", "node-b", b.Epoch)
	mustHold(t, s, "short", "node-b", takeover.Epoch)
}

// TestLeaseQuorumLost: without a quorum every lease operation fails as
// unavailable within its context; once the quorum is back, a lease granted
// before is still held by the same holder at the same epoch.
func TestLeaseQuorumLost(t *testing.T) {
	c := testetcd.Start(t, 3)
	s := open(t, c, "")
	g := mustAcquire(t, s, "job", "node-a", 30*time.Second)

	first := leader(t, c)
	second := (first + 1) % 3
	c.StopMember(first)
	c.StopMember(second)

	const bound = 2 * time.Second
	check := func(op string, call func(ctx context.Context) error) {
		t.Helper()
		start := time.Now()
		err := call(timeout(t, bound))
		// A failed acquire may spend cleanupTimeout revoking what it granted.
		if took := time.Since(start); took > bound+2*time.Second {
			t.Errorf("%s took %v with a %v context", op, took, bound)
		}
		mustBeUnavailable(t, op, err, op)
	}
	check("acquire", func(ctx context.Context) error {
		_, err := s.Acquire(ctx, "job", "node-b", tokens.Terms{TTL: 30 * time.Second}, tokens.Caller{})
		return err
	})
	check("renew", func(ctx context.Context) error {
		_, err := s.Renew(ctx, "job", "node-a", g.Epoch, tokens.Caller{})
		return err
	})
	check("lease", func(ctx context.Context) error {
		_, err := s.Lease(ctx, "job")
		return err
	})
	check("release", func(ctx context.Context) error { return s.Release(ctx, "other", "node-a", 1, tokens.Caller{}) })

	c.RestartMember(first)
	c.RestartMember(second)
	mustHold(t, s, "job", "node-a", g.Epoch)
	mustRenew(t, s, "job", "node-a", g.Epoch)
	_, err := s.Acquire(timeout(t, 10*time.Second), "job", "node-b", tokens.Terms{TTL: 30 * time.Second}, tokens.Caller{})
	storetest.MustBeHeld(t, err, "node-a", g.Epoch)
	mustCurrent(t, s, "job", g.Epoch)
}

// TestLeaseClosed: after Close every lease operation fails closed with
// ErrClosed, and validation still comes first.
func TestLeaseClosed(t *testing.T) {
	c := testetcd.Start(t, 1)
	s := open(t, c, "/closed/")
	g := mustAcquire(t, s, "job", "node-a", 30*time.Second)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := timeout(t, 5*time.Second)
	_, err := s.Acquire(ctx, "job", "node-a", tokens.Terms{TTL: 30 * time.Second}, tokens.Caller{})
	mustBeUnavailable(t, "Acquire after Close", err, "acquire")
	if !errors.Is(err, etcdstore.ErrClosed) {
		t.Errorf("Acquire after Close = %v, want ErrClosed", err)
	}
	_, err = s.Renew(ctx, "job", "node-a", g.Epoch, tokens.Caller{})
	mustBeUnavailable(t, "Renew after Close", err, "renew")
	mustBeUnavailable(t, "Release after Close", s.Release(ctx, "job", "node-a", g.Epoch, tokens.Caller{}), "release")
	_, err = s.Lease(ctx, "job")
	mustBeUnavailable(t, "Lease after Close", err, "lease")
	if _, err := s.Acquire(ctx, "job", "node-a", tokens.Terms{TTL: 0}, tokens.Caller{}); !errors.Is(err, tokens.ErrInvalidLease) {
		t.Errorf("Acquire with TTL 0 after Close = %v, want ErrInvalidLease", err)
	}
	// The lease itself is untouched: another client still sees it.
	mustHold(t, open(t, c, "/closed/"), "job", "node-a", g.Epoch)
}

// TestLeaseTTLsKeptExactly: etcd keeps lease TTLs in whole seconds, of at
// least its minimum (2s with its default election timeout). A TTL it cannot
// keep exactly is refused (the etcd lease would outlive the ExpiresAt
// reported), naming the range; one it can is granted as asked.
func TestLeaseTTLsKeptExactly(t *testing.T) {
	s := open(t, testetcd.Start(t, 1), "ttl/")
	if got := s.MinLeaseTTL(); got != 2*time.Second {
		t.Fatalf("MinLeaseTTL = %s, want 2s", got)
	}
	for _, ttl := range []time.Duration{time.Second, 1500 * time.Millisecond, 2500 * time.Millisecond} {
		_, err := s.Acquire(timeout(t, 10*time.Second), "l", "a", tokens.Terms{TTL: ttl}, tokens.Caller{})
		if !errors.Is(err, tokens.ErrInvalidLease) {
			t.Fatalf("Acquire with TTL %s = %v, want ErrInvalidLease", ttl, err)
		}
	}
	mustAcquire(t, s, "l", "a", 2*time.Second)
}
