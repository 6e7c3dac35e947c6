package tokens_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fencegw/fencegw/tokens"
)

// TestFenceEvictsAndReloads: with room for few resources, writes to many
// keep the cache bounded, and an evicted resource still refuses an epoch
// below its HWM and admits its current one, reloaded from the store.
func TestFenceEvictsAndReloads(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			s := newObserved(t, shared)
			f := tokens.NewFence(s, tokens.FenceOptions{MaxCached: 64})
			for i := range 1000 {
				admitted(t, f, fmt.Sprintf("r-%d", i), int64(i%7+2))
			}
			if n := tokens.CachedCount(f); n > 64 {
				t.Fatalf("%d resources cached, want at most 64", n)
			}
			for i := range 1000 {
				r := fmt.Sprintf("r-%d", i)
				h := int64(i%7 + 2)
				refused(t, f, r, h-1, h)
				admitted(t, f, r, h)
			}
		})
	}
}

// TestFenceEvictionKeepsTheGuarantee runs writers on a few hot resources
// beside a stream of writes to new ones, with a cache that evicts all the
// time: no admission is ever below one that completed before it started.
func TestFenceEvictionKeepsTheGuarantee(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			f := tokens.NewFence(newObserved(t, shared), tokens.FenceOptions{MaxCached: 1})
			var completed [4]atomic.Int64
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 1; i <= 150; i++ {
						if w == 7 { // the cold stream
							admitted(t, f, fmt.Sprintf("cold-%d", i), 1)
							continue
						}
						r := w % 4
						e := int64(i*8 + w%3)
						floor := completed[r].Load()
						if err := f.Admit(context.Background(), fmt.Sprintf("hot-%d", r), e); err == nil {
							if e < floor {
								t.Errorf("hot-%d: admitted %d after %d had been admitted", r, e, floor)
							}
							raiseTo(&completed[r], e)
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

// BenchmarkCacheMemory reports the heap each cached resource costs the
// Fence (names of 16 bytes), over an embedded store.
//
//	go test -run '^$' -bench BenchmarkCacheMemory ./tokens
func BenchmarkCacheMemory(b *testing.B) {
	const n = 200_000
	for b.Loop() {
		s := newObserved(b, false)
		f := tokens.NewFence(s, tokens.FenceOptions{})
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("resource-%07d", i)
		}
		before := heapInUse()
		for _, r := range names {
			tokens.CacheOnly(f, r, 1)
		}
		after := heapInUse()
		b.ReportMetric(float64(after-before)/n, "B/resource")
		runtime.KeepAlive(f)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
