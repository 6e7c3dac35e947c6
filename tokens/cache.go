package tokens

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
)

// cacheShards is the number of independently locked parts of a hwmCache.
const cacheShards = 64

// hwmCache holds the Fence's per-resource states, at most about size of
// them. A full shard evicts by CLOCK (second chance): a state used since
// the hand last passed it stays, one unused goes. A state in use (taken and
// not yet put back) is never evicted, so no two states of one resource are
// ever in use at once; a shard whose states are all in use grows past its
// share until they are put back.
//
// Evicting is safe because the HWM only grows: an evicted resource is
// reloaded from the store (over an exclusive store, whose every change
// passes through the Fence, that reload is exact).
type hwmCache struct {
	seed     maphash.Seed
	perShard int
	shards   [cacheShards]cacheShard
}

type cacheShard struct {
	mu   sync.Mutex
	m    map[string]*resourceState
	ring []*resourceState // the CLOCK's circle (order changes as states leave)
	hand int
}

func newHWMCache(size int) *hwmCache {
	c := &hwmCache{seed: maphash.MakeSeed(), perShard: max(size/cacheShards, 1)}
	for i := range c.shards {
		c.shards[i].m = make(map[string]*resourceState)
	}
	return c
}

// shardOf is the shard holding resource.
func (c *hwmCache) shardOf(resource string) *cacheShard {
	return &c.shards[maphash.String(c.seed, resource)%cacheShards]
}

// take returns resource's state, creating it (and evicting another when
// the shard is full). The caller must put it back.
func (c *hwmCache) take(resource string) *resourceState {
	sh := c.shardOf(resource)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if st, ok := sh.m[resource]; ok {
		st.inUse.Add(1)
		st.used.Store(true)
		return st
	}
	// A copy of the name: the request's own string may share a larger
	// buffer, which the cache must not keep alive.
	st := &resourceState{name: strings.Clone(resource)}
	st.inUse.Store(1)
	sh.m[st.name] = st
	sh.ring = append(sh.ring, st)
	for len(sh.ring) > c.perShard && sh.evictOne() {
	}
	return st
}

// evictOne evicts one state that is neither in use nor used since the
// hand last passed it, and reports whether it found one. The caller holds
// sh.mu.
func (sh *cacheShard) evictOne() bool {
	for range 2 * len(sh.ring) {
		if sh.hand >= len(sh.ring) {
			sh.hand = 0
		}
		old := sh.ring[sh.hand]
		if old.inUse.Load() == 0 && !old.used.Swap(false) {
			delete(sh.m, old.name)
			last := len(sh.ring) - 1
			sh.ring[sh.hand], sh.ring[last] = sh.ring[last], nil
			sh.ring = sh.ring[:last]
			return true
		}
		sh.hand++
	}
	return false // every state is in use: the shard stays over its share for now
}

// put gives back a state taken with take.
func (c *hwmCache) put(st *resourceState) { st.inUse.Add(-1) }

// peek returns resource's state without taking it, or nil.
func (c *hwmCache) peek(resource string) *resourceState {
	sh := c.shardOf(resource)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.m[resource]
}

// len is the number of states held.
func (c *hwmCache) len() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// resourceState is one resource's cached HWM.
type resourceState struct {
	hwm atomic.Int64 // cached HWM: exact when loaded over an exclusive store, a lower bound otherwise

	mu    sync.Mutex  // serializes loads and advances over an exclusive store
	ready atomic.Bool // hwm was loaded from an exclusive store; set under mu

	name  string       // the resource
	inUse atomic.Int32 // takers that have not put it back; changed under the shard's lock when taken
	used  atomic.Bool  // taken since the CLOCK hand last passed
}
