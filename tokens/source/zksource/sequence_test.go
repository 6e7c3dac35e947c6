package zksource

import (
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
		// Suffixes no in-order counter gives take no part (the red team's junk).
		{"beyond int32 ignored", []string{"zzz-9999999999", "a-2147483648", "b-0000000005"}, "b-0000000005"},
		{"negative ignored", []string{"lock--000000001", fmt.Sprintf("x-%010d", math.MinInt32), "c-0000000009"}, "c-0000000009"},
		{"only junk", []string{"zzz-9999999999", "y--000000001"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := lowest(tc.children)
			if ok != (tc.want != "") || got != tc.want {
				t.Fatalf("lowest(%q) = %q, %v; want %q", tc.children, got, ok, tc.want)
			}
		})
	}
}

// TestSequence: the suffix is exactly the counter as ZooKeeper formats it
// (%010d), from 0 to 2^31-1; anything else is no sequence.
func TestSequence(t *testing.T) {
	for _, n := range []int64{0, 1, 7, 1234567890, 2147483647} {
		name := fmt.Sprintf("_c_x-latch-%010d", n)
		if got, ok := sequence(name); !ok || got != n {
			t.Fatalf("sequence(%q) = %d, %v", name, got, ok)
		}
	}
	for _, name := range []string{"", "123456789", "latch-00000000a1", "latch-000000001 ", "latch-+000000001",
		"zzz-9999999999", "x-2147483648", "lock--000000001", "lock--2147483648"} {
		if _, ok := sequence(name); ok {
			t.Fatalf("sequence(%q) = ok; want no sequence", name)
		}
	}
}

// FuzzSequence: any name parses without panicking; a name has a sequence
// exactly when its last 10 characters are all digits and at most
// 2^31-1, and the sequence is their value.
func FuzzSequence(f *testing.F) {
	for _, s := range []string{"", "0000000000", "_c_a-latch-0000000003", "lock--000000001", "x-99999999999",
		"x-2147483648", "x-2147483647", "zzz-9999999999", "é0000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		seq, ok := sequence(name)
		var suffix string
		if len(name) >= seqLen {
			suffix = name[len(name)-seqLen:]
		}
		valid := suffix != "" && strings.Trim(suffix, "0123456789") == "" && suffix <= "2147483647"
		switch {
		case ok != valid:
			t.Fatalf("sequence(%q) = %d, %v; want ok %v", name, seq, ok, valid)
		case ok && fmt.Sprintf("%010d", seq) != suffix:
			t.Fatalf("sequence(%q) = %d, not its 10-digit suffix", name, seq)
		}
	})
}
