package zksource

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestLowest: the leader is the child with the lowest sequence suffix,
// whatever prefix Curator's recipes give the names (a protection GUID that
// sorts in any order, latch- or lock-); names without a 10-digit suffix
// take no part.
func TestLowest(t *testing.T) {
	for _, tc := range []struct {
		name     string
		children []string
		want     string // "" for no leader
	}{
		{"none", nil, ""},
		{"no participants", []string{"config", "latch-12", "lock-00000000x7"}, ""},
		{"LeaderLatch", []string{
			"_c_f9b1e3a0-0000-4000-8000-000000000001-latch-0000000012",
			"_c_0a2c5d7e-0000-4000-8000-000000000002-latch-0000000003",
			"_c_ffffffff-0000-4000-8000-000000000003-latch-0000000007",
		}, "_c_0a2c5d7e-0000-4000-8000-000000000002-latch-0000000003"},
		{"InterProcessMutex", []string{
			"_c_a-lock-0000000010", "_c_b-lock-0000000009", "_c_c-lock-0000000011",
		}, "_c_b-lock-0000000009"},
		// The lexically lowest name is not the leader: the GUID comes first.
		{"prefix order ignored", []string{"_c_zzz-latch-0000000001", "_c_aaa-latch-0000000002"}, "_c_zzz-latch-0000000001"},
		{"plain recipe", []string{"n_0000000101", "n_0000000100"}, "n_0000000100"},
		{"bare number", []string{"0000000005", "x-0000000004"}, "x-0000000004"},
		{"others ignored", []string{"lock-0000000007", "readme", "lock-7"}, "lock-0000000007"},
		{"highest counter", []string{"a-2147483647", "b-2147483646"}, "b-2147483646"},
		{"more digits", []string{"a-10000000002", "b-0000000003"}, "a-10000000002"},
		{"equal numbers by name", []string{"b-0000000001", "a-0000000001"}, "a-0000000001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := lowest(tc.children)
			if err != nil {
				t.Fatalf("lowest: %v", err)
			}
			if ok != (tc.want != "") || got != tc.want {
				t.Fatalf("lowest(%q) = %q, %v; want %q", tc.children, got, ok, tc.want)
			}
		})
	}
}

// TestLowestOverflow: a counter that passed 2^31-1 is formatted with a
// sign; the order is lost, so the read fails closed.
func TestLowestOverflow(t *testing.T) {
	for _, next := range []string{
		fmt.Sprintf("_c_b-latch-%010d", math.MinInt32), // "-2147483648"
		fmt.Sprintf("_c_b-latch-%010d", -1),            // "-000000001"
	} {
		_, _, err := lowest([]string{"_c_a-latch-2147483647", next})
		if !errors.Is(err, ErrSequenceOverflow) {
			t.Fatalf("lowest with child %q: %v, want ErrSequenceOverflow", next, err)
		}
	}
}

// TestSequence: the suffix is exactly the counter as ZooKeeper formats it
// (%010d).
func TestSequence(t *testing.T) {
	for _, n := range []int64{0, 1, 7, 1234567890, 2147483647} {
		name := fmt.Sprintf("_c_x-latch-%010d", n)
		if got, ok, err := sequence(name); err != nil || !ok || got != n {
			t.Fatalf("sequence(%q) = %d, %v, %v", name, got, ok, err)
		}
	}
	for _, name := range []string{"", "123456789", "latch-00000000a1", "latch-000000001 ", "latch-+000000001"} {
		if _, ok, err := sequence(name); ok || err != nil {
			t.Fatalf("sequence(%q) = %v, %v; want no sequence", name, ok, err)
		}
	}
}

// FuzzSequence: any name parses without panicking; a sequence is the value
// of its last 10 characters, all digits, at most 2^31-1; an overflow error
// comes exactly for '-' and 9 digits or 10 digits above that.
func FuzzSequence(f *testing.F) {
	for _, s := range []string{"", "0000000000", "_c_a-latch-0000000003", "lock--000000001", "x-99999999999", "x-2147483648", "é0000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		seq, ok, err := sequence(name)
		isDigits := func(s string) bool { return strings.Trim(s, "0123456789") == "" }
		var suffix string
		if len(name) >= seqLen {
			suffix = name[len(name)-seqLen:]
		}
		digits := suffix != "" && isDigits(suffix)
		overflowed := suffix != "" && ((suffix[0] == '-' && isDigits(suffix[1:])) || (digits && suffix > "2147483647"))
		switch {
		case err != nil && (ok || !overflowed || !errors.Is(err, ErrSequenceOverflow)):
			t.Fatalf("sequence(%q) = %v, %v: not an overflowed counter", name, ok, err)
		case err == nil && overflowed:
			t.Fatalf("sequence(%q) = %d, %v: no error for an overflowed counter", name, seq, ok)
		case ok && fmt.Sprintf("%010d", seq) != suffix:
			t.Fatalf("sequence(%q) = %d, not its 10-digit suffix", name, seq)
		case !ok && err == nil && digits:
			t.Fatalf("sequence(%q): no sequence for a name ending in 10 digits", name)
		}
	})
}
