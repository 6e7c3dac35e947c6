package guard

import (
	"math"
	"testing"
	"time"
)

// TestPerRate: the time a body's size adds to its budget, exact and
// without overflow.
func TestPerRate(t *testing.T) {
	for _, tc := range []struct {
		n, rate int64
		want    time.Duration
	}{
		{60000, 0, 0},
		{0, 1000, 0},
		{-1, 1000, 0},
		{60000, 64 << 10, 60000 * time.Second / (64 << 10)},
		{1500, 1000, 1500 * time.Millisecond},
		{1 << 62, 1, math.MaxInt64},
		{1 << 40, 3, math.MaxInt64},
		{1 << 40, 1 << 30, 1024 * time.Second},
		{1<<40 + 1<<29, 1 << 30, 1024*time.Second + time.Second/2},
	} {
		if got := perRate(tc.n, tc.rate); got != tc.want {
			t.Errorf("perRate(%d, %d) = %v, want %v", tc.n, tc.rate, got, tc.want)
		}
	}
	o := BudgetOptions{BodyTimeout: time.Hour, MinBodyRate: 1}
	start := time.Now()
	if by := o.bodyBy(start, math.MaxInt64); !by.After(start.Add(100 * 365 * 24 * time.Hour)) {
		t.Errorf("bodyBy of the largest body = %v, want the farthest future", by)
	}
}
