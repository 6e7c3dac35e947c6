package tokens

// CachedCount is the number of resources f holds in memory (for tests).
func CachedCount(f *Fence) int { return f.cache.len() }
