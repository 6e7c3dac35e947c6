package main

import (
	"strings"
	"testing"
)

// TestEpochFlagIsDecimal: -epoch takes decimal digits only, so a padded
// epoch is the epoch it spells (010 is ten, never octal eight) and a base
// prefix, sign, underscore or a value beyond 2^63-1 is refused before any
// call; renew and release require it.
func TestEpochFlagIsDecimal(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "010": 10, "9223372036854775807": 9223372036854775807} {
		var e epochFlag
		if err := e.Set(in); err != nil || int64(e) != want {
			t.Errorf("-epoch %s = %d, %v; want %d", in, e, err, want)
		}
	}
	for _, in := range []string{"0x8", "0o10", "0b1000", "+8", "-1", "1_0", "0", "", " 1", "1e3", "9223372036854775808"} {
		var e epochFlag
		if err := e.Set(in); err == nil {
			t.Errorf("-epoch %q accepted as %d", in, e)
		}
	}
	// Refused by the command itself, before it dials the (absent) API.
	for _, args := range [][]string{
		{"lease", "renew", "jobs", "--holder", "a", "--epoch", "0x8"},
		{"lease", "release", "jobs", "--holder", "a"},
	} {
		_, stderr, code := runCLI(t, append(args, "--api", "http://127.0.0.1:1")...)
		if code != 2 || !strings.Contains(stderr, "epoch") || strings.Contains(stderr, "connection refused") {
			t.Errorf("%q: exit %d, %s", args, code, stderr)
		}
	}
}
