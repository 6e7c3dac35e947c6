package signed

import (
	"hash/maphash"
	"strings"
	"sync"
	"time"
)

// maxCacheShards is how many independently locked shards a cache has at
// most, so that concurrent requests rarely wait for one another.
const maxCacheShards = 16

// evictScan is how many entries an insertion into a full shard looks at for
// an expired one before it evicts an arbitrary one.
const evictScan = 8

// cache remembers verified tokens until a deadline (exp + leeway). It is
// bounded: a full shard evicts an expired entry if it finds one among a few,
// else an arbitrary one (Go's map iteration order). Only successes are put,
// so only tokens signed by the keyring can occupy it. A nil *cache caches
// nothing.
type cache struct {
	seed     maphash.Seed
	perShard int
	shards   []cacheShard
}

type cacheShard struct {
	mu      sync.Mutex
	entries map[string]cacheEntry
}

type cacheEntry struct {
	claims   Claims
	deadline time.Time
}

// newCache returns a cache of at most size entries, or nil when size <= 0.
func newCache(size int) *cache {
	if size <= 0 {
		return nil
	}
	n := min(size, maxCacheShards)
	c := &cache{seed: maphash.MakeSeed(), perShard: size / n, shards: make([]cacheShard, n)}
	for i := range c.shards {
		c.shards[i].entries = make(map[string]cacheEntry)
	}
	return c
}

func (c *cache) shard(token string) *cacheShard {
	return &c.shards[maphash.String(c.seed, token)%uint64(len(c.shards))]
}

// get returns the claims cached for token if now is before the entry's
// deadline. An entry past its deadline is dropped and reported as a miss.
func (c *cache) get(token string, now time.Time) (Claims, bool) {
	if c == nil {
		return Claims{}, false
	}
	s := c.shard(token)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[token]
	if !ok {
		return Claims{}, false
	}
	if !now.Before(e.deadline) {
		delete(s.entries, token)
		return Claims{}, false
	}
	return e.claims, true
}

// put caches claims for token until deadline, evicting if the shard is full
// (entries whose deadline is not after now count as expired).
func (c *cache) put(token string, claims Claims, deadline, now time.Time) {
	if c == nil {
		return
	}
	s := c.shard(token)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.entries[token]; !ok && len(s.entries) >= c.perShard {
		s.evictLocked(now)
	}
	// Clone: the caller's string may share memory with a larger buffer.
	s.entries[strings.Clone(token)] = cacheEntry{claims: claims, deadline: deadline}
}

// evictLocked drops the expired entries among the first evictScan it visits,
// or else the first visited.
func (s *cacheShard) evictLocked(now time.Time) {
	var first string
	seen, dropped := 0, false
	for k, e := range s.entries {
		if seen == 0 {
			first = k
		}
		if !now.Before(e.deadline) {
			delete(s.entries, k)
			dropped = true
		}
		if seen++; seen >= evictScan {
			break
		}
	}
	if !dropped && seen > 0 {
		delete(s.entries, first)
	}
}

// len returns the number of cached entries (for tests).
func (c *cache) len() int {
	if c == nil {
		return 0
	}
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += len(s.entries)
		s.mu.Unlock()
	}
	return n
}
