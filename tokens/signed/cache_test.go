package signed

import (
	"errors"
	"hash/maphash"
	"strings"
	"testing"
	"time"
)

func TestCacheHitAndExpiry(t *testing.T) {
	k := mustKey(t, AlgEdDSA)
	r := mustRing(t, k)
	s := mustSigner(t, r)
	clock := newClock(t0)
	v := mustVerifier(t, r, clock)
	tok, exp, err := s.Sign("node-a", "r", 3, t0)
	if err != nil {
		t.Fatal(err)
	}

	first, err := v.VerifyClaims(tok)
	if err != nil {
		t.Fatal(err)
	}
	if n := v.cache.len(); n != 1 {
		t.Fatalf("cache holds %d entries after a success, want 1", n)
	}
	second, err := v.VerifyClaims(tok)
	if err != nil || second != first {
		t.Fatalf("cached: %+v, %v; want %+v", second, err, first)
	}

	// Prove the second answer came from the cache: mark the entry.
	sh := v.cache.shard(tok)
	sh.mu.Lock()
	e := sh.entries[tok]
	e.claims.Holder = "from-cache"
	sh.entries[tok] = e
	sh.mu.Unlock()
	if c, _ := v.VerifyClaims(tok); c.Holder != "from-cache" {
		t.Fatalf("second Verify did not hit the cache: %+v", c)
	}

	// Within the leeway after exp the cache answers, as the verifier would.
	clock.Set(exp.Add(DefaultLeeway - time.Second))
	if c, err := v.VerifyClaims(tok); err != nil || c.Holder != "from-cache" {
		t.Fatalf("within leeway: %+v, %v", c, err)
	}
	// Past exp + leeway the entry is a miss, verification runs and refuses.
	clock.Set(exp.Add(DefaultLeeway))
	if _, err := v.VerifyClaims(tok); !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired cached token: %v, want expired", err)
	}
	if n := v.cache.len(); n != 0 {
		t.Errorf("cache holds %d entries after expiry, want 0", n)
	}
}

func TestCacheOnlySuccesses(t *testing.T) {
	k := mustKey(t, AlgEdDSA)
	r := mustRing(t, k)
	v := mustVerifier(t, r, newClock(t0))
	tok := mustSign(t, mustSigner(t, r), "node-a", "r", 3, t0)
	bad := tok[:len(tok)-4] + "AAAA"
	for range 3 {
		if _, err := v.VerifyClaims(bad); err == nil {
			t.Fatal("tampered token accepted")
		}
	}
	if n := v.cache.len(); n != 0 {
		t.Errorf("a failure was cached (%d entries)", n)
	}

	off := mustVerifier(t, r, newClock(t0), WithCacheSize(0))
	if _, err := off.VerifyClaims(tok); err != nil {
		t.Fatal(err)
	}
	if off.cache != nil || off.cache.len() != 0 {
		t.Error("WithCacheSize(0) still caches")
	}
}

func TestCacheBounded(t *testing.T) {
	k := mustKey(t, AlgEdDSA)
	r := mustRing(t, k)
	s := mustSigner(t, r)
	for _, size := range []int{1, 5, 20, 100} {
		v := mustVerifier(t, r, newClock(t0), WithCacheSize(size))
		for i := range 3 * size {
			if _, err := v.VerifyClaims(mustSign(t, s, "h", "r", int64(i+1), t0)); err != nil {
				t.Fatal(err)
			}
			if n := v.cache.len(); n > size {
				t.Fatalf("size %d: cache holds %d entries", size, n)
			}
		}
	}
}

func TestCacheEvictsExpiredFirst(t *testing.T) {
	// One shard of four entries, so that eviction is deterministic.
	c := &cache{seed: maphash.MakeSeed(), perShard: 4, shards: make([]cacheShard, 1)}
	c.shards[0].entries = make(map[string]cacheEntry)
	c.put("live1", Claims{Epoch: 1}, t0.Add(time.Hour), t0)
	c.put("dead", Claims{Epoch: 2}, t0.Add(time.Second), t0)
	c.put("live2", Claims{Epoch: 3}, t0.Add(time.Hour), t0)
	c.put("live3", Claims{Epoch: 4}, t0.Add(time.Hour), t0)
	now := t0.Add(time.Minute)
	c.put("new", Claims{Epoch: 5}, t0.Add(time.Hour), now)
	if c.len() != 4 {
		t.Fatalf("len = %d, want 4", c.len())
	}
	for _, k := range []string{"live1", "live2", "live3", "new"} {
		if _, ok := c.get(k, now); !ok {
			t.Errorf("%s evicted while an expired entry was present", k)
		}
	}
	if _, ok := c.get("dead", t0); ok {
		t.Error("expired entry survived eviction")
	}

	var nilCache *cache
	nilCache.put("x", Claims{}, t0, t0)
	if _, ok := nilCache.get("x", t0); ok {
		t.Error("nil cache answered")
	}
}
