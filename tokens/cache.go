package tokens

import (
	"hash/maphash"
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
//
// The cache holds no Go pointers per resource: states live in fixed chunks
// of slots, names in a byte arena, and the index maps hashes to slots. The
// garbage collector marks it in a few steps however many resources it
// holds; with a pointer per resource, a million cached resources made every
// collection walk a million objects.
type hwmCache struct {
	seed     maphash.Seed
	perShard int
	shards   [cacheShards]cacheShard
}

// slotChunk is how many states one chunk holds. Chunks never move, so a
// taken state's address stays valid.
const slotChunk = 256

// noSlot ends a chain of slots whose names share a hash.
const noSlot = -1

type cacheShard struct {
	mu     sync.Mutex
	index  map[uint64]int32 // name hash → first slot of the names with that hash
	chunks [][]resourceState
	slots  int32   // slots ever allocated (the CLOCK's circle)
	free   []int32 // slots of evicted states, reused first
	live   int     // states held
	hand   int32

	names       []byte // the names of the states held, and garbage of evicted ones
	garbage     int    // bytes of names that belong to no state
	compactions int    // of names, for tests
}

func newHWMCache(size int) *hwmCache {
	c := &hwmCache{seed: maphash.MakeSeed(), perShard: max(size/cacheShards, 1)}
	for i := range c.shards {
		c.shards[i].index = make(map[uint64]int32)
	}
	return c
}

func (c *hwmCache) hash(resource string) uint64 { return maphash.String(c.seed, resource) }

// shardOf is the shard holding resource.
func (c *hwmCache) shardOf(resource string) *cacheShard {
	return &c.shards[c.hash(resource)%cacheShards]
}

// take returns resource's state, creating it (and evicting another when
// the shard is full). The caller must put it back.
func (c *hwmCache) take(resource string) *resourceState {
	h := c.hash(resource)
	sh := &c.shards[h%cacheShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if st := sh.find(h, resource); st != nil {
		st.inUse.Add(1)
		st.used.Store(true)
		return st
	}
	for sh.live >= c.perShard && sh.evictOne() {
	}
	st := sh.insert(h, resource)
	st.inUse.Store(1)
	return st
}

// put gives back a state taken with take.
func (c *hwmCache) put(st *resourceState) { st.inUse.Add(-1) }

// peek returns resource's state without taking it, or nil. Once the lock
// is released the state may be evicted and its slot given to another
// resource: only tests, which control that, may keep it.
func (c *hwmCache) peek(resource string) *resourceState {
	h := c.hash(resource)
	sh := &c.shards[h%cacheShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.find(h, resource)
}

// cachedHWM returns the HWM held for resource, and whether one is held.
func (c *hwmCache) cachedHWM(resource string) (int64, bool) {
	h := c.hash(resource)
	sh := &c.shards[h%cacheShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if st := sh.find(h, resource); st != nil {
		return st.hwm.Load(), true
	}
	return 0, false
}

// len is the number of states held.
func (c *hwmCache) len() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += sh.live
		sh.mu.Unlock()
	}
	return n
}

// slot returns the state in slot i. The caller holds sh.mu.
func (sh *cacheShard) slot(i int32) *resourceState {
	return &sh.chunks[i/slotChunk][i%slotChunk]
}

// name is the name of st, in the arena. The caller holds sh.mu.
func (sh *cacheShard) name(st *resourceState) []byte {
	return sh.names[st.nameAt : st.nameAt+st.nameLen]
}

// find returns resource's state, or nil. The caller holds sh.mu.
func (sh *cacheShard) find(h uint64, resource string) *resourceState {
	i, ok := sh.index[h]
	if !ok {
		return nil
	}
	for i != noSlot {
		st := sh.slot(i)
		if string(sh.name(st)) == resource {
			return st
		}
		i = st.next
	}
	return nil
}

// insert places a new state for resource, which find did not hold. The
// caller holds sh.mu.
func (sh *cacheShard) insert(h uint64, resource string) *resourceState {
	var i int32
	if n := len(sh.free); n > 0 {
		i, sh.free = sh.free[n-1], sh.free[:n-1]
	} else {
		if int(sh.slots) == len(sh.chunks)*slotChunk {
			sh.chunks = append(sh.chunks, make([]resourceState, slotChunk))
		}
		i = sh.slots
		sh.slots++
	}
	st := sh.slot(i)
	st.hwm.Store(0)
	st.ready.Store(false)
	st.leaseEpoch.Store(0)
	st.leaseUntil.Store(0)
	st.released.Store(false)
	st.leased.Store(false)
	st.used.Store(false)
	st.held = true
	st.hash = h
	st.nameAt, st.nameLen = uint32(len(sh.names)), uint32(len(resource))
	sh.names = append(sh.names, resource...)
	st.next = noSlot
	if first, ok := sh.index[h]; ok {
		st.next = first
	}
	sh.index[h] = i
	sh.live++
	return st
}

// evictOne evicts one state that is neither in use nor used since the
// hand last passed it, and reports whether it found one. The caller holds
// sh.mu.
func (sh *cacheShard) evictOne() bool {
	for range 2 * sh.slots {
		if sh.hand >= sh.slots {
			sh.hand = 0
		}
		i := sh.hand
		sh.hand++
		st := sh.slot(i)
		if st.held && st.inUse.Load() == 0 && !st.used.Swap(false) {
			sh.remove(i, st)
			return true
		}
	}
	return false // every state is in use: the shard stays over its share for now
}

// remove drops the state in slot i from the index and frees its slot. The
// caller holds sh.mu.
func (sh *cacheShard) remove(i int32, st *resourceState) {
	first := sh.index[st.hash]
	switch {
	case first == i && st.next == noSlot:
		delete(sh.index, st.hash)
	case first == i:
		sh.index[st.hash] = st.next
	default:
		prev := sh.slot(first)
		for prev.next != i {
			prev = sh.slot(prev.next)
		}
		prev.next = st.next
	}
	st.held = false
	sh.free = append(sh.free, i)
	sh.live--
	sh.garbage += int(st.nameLen)
	if sh.garbage > 64<<10 && sh.garbage > len(sh.names)/2 {
		sh.compactNames()
	}
}

// compactNames rewrites the arena with the names of the states held only.
// The caller holds sh.mu.
func (sh *cacheShard) compactNames() {
	names := make([]byte, 0, len(sh.names)-sh.garbage)
	for i := range sh.slots {
		st := sh.slot(i)
		if !st.held {
			continue
		}
		at := uint32(len(names))
		names = append(names, sh.name(st)...)
		st.nameAt = at
	}
	sh.names, sh.garbage = names, 0
	sh.compactions++
}

// resourceState is one resource's cached HWM. It holds no Go pointers (see
// hwmCache).
type resourceState struct {
	hwm atomic.Int64 // cached HWM: exact when loaded over an exclusive store, a lower bound otherwise

	mu    sync.Mutex  // serializes loads and advances over an exclusive store
	ready atomic.Bool // hwm was loaded from an exclusive store; set under mu

	// The lease of the resource's name, over an exclusive store once
	// ready; changed under mu.
	leaseEpoch atomic.Int64 // its current grant's epoch; 0: never leased
	leaseUntil atomic.Int64 // Fence.since() until which that grant is known live; 0: lapsed or released
	released   atomic.Bool  // it ended by release
	leased     atomic.Bool  // a lease of the name was ever granted, as this Fence learned (see leasedVerdict)

	inUse atomic.Int32 // takers that have not put it back; changed under the shard's lock when taken
	used  atomic.Bool  // taken since the CLOCK hand last passed

	// Under the shard's lock:
	held            bool   // the slot holds a resource's state
	hash            uint64 // of the name
	next            int32  // the next slot whose name has the same hash, or noSlot
	nameAt, nameLen uint32 // the name, in the shard's arena
}
