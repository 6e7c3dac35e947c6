package tokens

import (
	"fmt"
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
