package tokens

// CachedCount is the number of resources f holds in memory (for tests).
func CachedCount(f *Fence) int { return f.cache.len() }

// CacheOnly puts resource in f's cache at hwm without the store (for
// measuring the cache alone).
func CacheOnly(f *Fence, resource string, hwm int64) {
	st := f.cache.take(resource)
	st.hwm.Store(hwm)
	f.cache.put(st)
}
