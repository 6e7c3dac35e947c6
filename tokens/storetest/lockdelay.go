package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// testReleaseKeepsLockDelay checks that no release shortens the lock-delay
// of a grant that lapsed uncleanly: not its holder's late release (nor a
// second one), not a release with an older epoch or by another holder, and
// not a contender that releases with the holder and epoch a lock-delay
// refusal told it. The delay runs to its end, and then the lease is free.
func testReleaseKeepsLockDelay(t *testing.T, f Factory) {
	s := f(t)
	const (
		name  = "delayed"
		delay = 4 * time.Second
	)
	// Through a Fence, as the gateway does: over an exclusive store it
	// keeps the grant's life in memory.
	fence := tokens.NewFence(s, tokens.FenceOptions{})
	old := mustAcquire(t, s, name, "node-a", 15*time.Second) // an older epoch of the same holder
	g, err := fence.Acquire(ctx(t), name, "node-a", tokens.Terms{TTL: shortTTL(s), LockDelay: delay}, anon)
	if err != nil || g.Epoch != old.Epoch+1 {
		t.Fatalf("Acquire again with a lock-delay = %+v, %v; want epoch %d", g.Lease, err, old.Epoch+1)
	}
	markWhenLapsed(t, s, name)
	lapsed := time.Now()
	d := mustBeDelayed(t, s, name, g)
	releases := []struct {
		why    string
		holder string
		epoch  int64
		lost   bool
	}{
		{"the lapsed grant, released late with what the refusal said", d.Holder, d.Epoch, false},
		{"the lapsed grant, released again", d.Holder, d.Epoch, false},
		{"an older epoch", "node-a", old.Epoch, true},
		{"another holder", "node-b", d.Epoch, true},
	}
	for _, r := range releases {
		err := fence.Release(ctx(t), name, r.holder, r.epoch, anon)
		if r.lost {
			MustBeLost(t, err)
		} else if err != nil {
			t.Fatalf("Release of %s: %v", r.why, err)
		}
		mustBeDelayed(t, s, name, g)
	}
	// A write of the lapsed grant is refused as lapsed, not released: by
	// the Fence that saw the releases, and by a fresh one.
	err = fence.Admit(ctx(t), name, g.Epoch)
	if stale := (*tokens.StaleEpochError)(nil); !errors.As(err, &stale) || !strings.Contains(stale.Reason, "lapsed") {
		t.Fatalf("Admit of the lapsed grant after its releases = %v, want stale: lapsed (reason %q)", err, stale.Reason)
	}
	mustBeLapsed(t, s, name, g.Epoch, "lapsed")
	b := acquireAfterDelay(t, s, name, "node-b")
	// The stores round the delay up (etcd to whole seconds, from the
	// grant), and the lapse is seen up to a second late: never 1.5s early.
	if ran := time.Since(lapsed); ran < delay-1500*time.Millisecond {
		t.Fatalf("the lock-delay of %s ended %s after the lapse", delay, ran)
	}
	if b.Epoch != g.Epoch+1 {
		t.Fatalf("grant after the lock-delay at epoch %d, want %d", b.Epoch, g.Epoch+1)
	}
}

// testReleaseAtExpiryKeepsLockDelay: a grant of the shortest TTL the
// store keeps, released by its holder just after the ExpiresAt the grant
// returned, lapsed: the release succeeds and the lock-delay runs, however
// late the store itself notices the lapse (etcd deletes an expired lease's
// keys up to about half a second late).
func testReleaseAtExpiryKeepsLockDelay(t *testing.T, f Factory) {
	s := f(t)
	const name = "short"
	ttl, _ := tokens.LeaseTTLRange(s)
	g, err := s.Acquire(ctx(t), name, "node-a", tokens.Terms{TTL: ttl, LockDelay: 6 * time.Second}, anon)
	if err != nil {
		t.Fatalf("Acquire with the shortest TTL, %s: %v", ttl, err)
	}
	time.Sleep(time.Until(g.ExpiresAt) + 20*time.Millisecond)
	if err := s.Release(ctx(t), name, "node-a", g.Epoch, anon); err != nil {
		t.Fatalf("Release just after the expiry: %v", err)
	}
	// Until the store has deleted the lapsed grant it may still refuse a
	// contender as held; then the lock-delay, never a grant.
	markWhenLapsed(t, s, name)
	mustBeDelayed(t, s, name, g)
}

// mustBeDelayed fails t unless an acquire of name by a contender is refused
// with a *tokens.LockDelayError naming the lapsed grant g, and returns it.
func mustBeDelayed(t *testing.T, s tokens.Store, name string, g tokens.Grant) *tokens.LockDelayError {
	t.Helper()
	_, err := s.Acquire(ctx(t), name, "node-b", tokens.Terms{TTL: 15 * time.Second}, anon)
	var d *tokens.LockDelayError
	if !errors.As(err, &d) || d.Holder != g.Holder || d.Epoch != g.Epoch || d.Left <= 0 {
		t.Fatalf("Acquire during the lock-delay of epoch %d = %v, want *LockDelayError", g.Epoch, err)
	}
	return d
}

// acquireAfterDelay retries an acquire of name by holder while it is
// refused for lock-delay (bounded, not timed) and returns the grant.
func acquireAfterDelay(t *testing.T, s tokens.Store, name, holder string) tokens.Grant {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		g, err := s.Acquire(ctx(t), name, holder, tokens.Terms{TTL: 15 * time.Second}, anon)
		if err == nil {
			return g
		}
		if !errors.As(err, new(*tokens.LockDelayError)) || time.Now().After(deadline) {
			t.Fatalf("Acquire after the lock-delay: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
