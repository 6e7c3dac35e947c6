package tokens

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestCacheNeverEvictsInUse: a state taken and not put back survives any
// number of newcomers; once put back and left unused, it is evicted.
func TestCacheNeverEvictsInUse(t *testing.T) {
	c := newHWMCache(cacheShards) // one state per shard
	held := c.take("held")
	held.hwm.Store(7)
	for i := range 2000 {
		c.put(c.take(fmt.Sprintf("r-%d", i)))
	}
	if got := c.peek("held"); got != held {
		t.Fatal("a state in use was evicted")
	}
	c.put(held)
	for i := range 2000 {
		c.put(c.take(fmt.Sprintf("s-%d", i)))
	}
	if c.peek("held") != nil {
		t.Fatal("an unused state was never evicted")
	}
	if n := c.len(); n > cacheShards {
		t.Fatalf("%d states kept, want at most %d once none is in use", n, cacheShards)
	}
}

// TestCacheSecondChance: a state used since the hand last passed stays
// over one that was not.
func TestCacheSecondChance(t *testing.T) {
	c := newHWMCache(2 * cacheShards)
	sh := &c.shards[0]
	var names []string
	for i := 0; len(names) < 3; i++ {
		n := fmt.Sprintf("k-%d", i)
		if c.shardOf(n) == sh {
			names = append(names, n)
		}
	}
	a := c.take(names[0])
	c.put(a)
	b := c.take(names[1])
	c.put(b)
	a.used.Store(false)
	b.used.Store(false)
	c.put(c.take(names[0])) // a used again
	c.put(c.take(names[2])) // evicts b, not a
	if c.peek(names[0]) == nil || c.peek(names[1]) != nil {
		t.Fatalf("after a newcomer: a kept %v, b kept %v; want a kept, b evicted", c.peek(names[0]) != nil, c.peek(names[1]) != nil)
	}
}

// TestCacheHashChains: names whose hashes collide share an index entry and
// are told apart by name; removing any of them keeps the others.
func TestCacheHashChains(t *testing.T) {
	for _, drop := range []int{0, 1, 2} {
		sh := &newHWMCache(cacheShards).shards[0]
		names := []string{"a", "b", "c"}
		slots := make([]int32, len(names))
		for i, n := range names {
			sh.insert(42, n).hwm.Store(int64(i + 1))
			slots[i] = sh.index[42]
		}
		for i, n := range names {
			if st := sh.find(42, n); st == nil || st.hwm.Load() != int64(i+1) {
				t.Fatalf("find %q: %v", n, st)
			}
		}
		sh.remove(slots[drop], sh.slot(slots[drop]))
		for i, n := range names {
			st := sh.find(42, n)
			if (st == nil) != (i == drop) || (st != nil && st.hwm.Load() != int64(i+1)) {
				t.Fatalf("after removing %q, find %q: %v", names[drop], n, st)
			}
		}
		if sh.find(43, "a") != nil {
			t.Fatal("found a name under another hash")
		}
	}
}

// TestCacheAgainstModel: a long random sequence of takes, puts and lookups
// over a small cache (so evictions and name compactions happen) agrees with
// a plain map of what must still be there: a state taken and not put back
// keeps its HWM, any state found holds its own resource's last HWM, and the
// cache stays within its size once nothing is in use.
func TestCacheAgainstModel(t *testing.T) {
	const size = 4 * cacheShards
	c := newHWMCache(size)
	rng := rand.New(rand.NewPCG(1, 2))
	hwm := map[string]int64{}           // the last HWM each resource was given
	held := map[string]*resourceState{} // taken, not put back
	for step := range 200_000 {
		// Names up to 110 bytes long: each shard's discarded names pass
		// the 64 KiB that makes it compact them, wherever the cache's
		// random hash seed sends them.
		name := fmt.Sprintf("resource-%d-%s", rng.IntN(5000), strings.Repeat("x", rng.IntN(100)))
		switch op := rng.IntN(10); {
		case op < 6: // take, set, put back
			st := c.take(name)
			if h := st.hwm.Load(); h != 0 && h != hwm[name] {
				t.Fatalf("step %d: %q holds %d, want 0 or %d", step, name, h, hwm[name])
			}
			hwm[name]++
			st.hwm.Store(hwm[name])
			c.put(st)
		case op < 8: // take and keep, or put back one kept
			if st, ok := held[name]; ok {
				delete(held, name)
				c.put(st)
				c.put(st)
				continue
			}
			if len(held) < 8 {
				st := c.take(name)
				if h := st.hwm.Load(); h != 0 && h != hwm[name] {
					t.Fatalf("step %d: %q holds %d, want 0 or %d", step, name, h, hwm[name])
				}
				st.hwm.Store(hwm[name]) // as a reload from the store would
				held[name] = st
				st.inUse.Add(1) // held by the model; put back twice when released
			}
		default:
			if h, ok := c.cachedHWM(name); ok && h != hwm[name] {
				t.Fatalf("step %d: cached %q = %d, want %d", step, name, h, hwm[name])
			}
		}
		for n, st := range held {
			if got := c.peek(n); got != st || st.hwm.Load() != hwm[n] {
				t.Fatalf("step %d: held %q: peek %p (held %p), hwm %d, want %d", step, n, got, st, st.hwm.Load(), hwm[n])
			}
		}
	}
	for _, st := range held {
		c.put(st)
		c.put(st)
	}
	compactions := 0
	for i := range c.shards {
		compactions += c.shards[i].compactions
	}
	if compactions == 0 {
		t.Error("no shard compacted its names: the test missed that path")
	}
	c.put(c.take("one more")) // evicts down to size
	if n := c.len(); n > size+cacheShards {
		t.Fatalf("%d states held, want about %d", n, size)
	}
}

// TestResourceStateHasNoPointers: the cache's promise to the collector.
func TestResourceStateHasNoPointers(t *testing.T) {
	var walk func(reflect.Type, string)
	walk = func(ty reflect.Type, path string) {
		switch ty.Kind() {
		case reflect.Pointer, reflect.String, reflect.Slice, reflect.Map, reflect.Interface,
			reflect.Chan, reflect.Func, reflect.UnsafePointer:
			t.Errorf("%s is a %s: resourceState must hold no Go pointers", path, ty.Kind())
		case reflect.Struct:
			for f := range ty.Fields() {
				walk(f.Type, path+"."+f.Name)
			}
		case reflect.Array:
			walk(ty.Elem(), path+"[]")
		}
	}
	walk(reflect.TypeFor[resourceState](), "resourceState")
}
