package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestDescribeBuild: the version is the module's when the build has one,
// else the linker's main.version; the commit follows when recorded, and
// nothing is said of it when it is not (-buildvcs=false).
func TestDescribeBuild(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "false"}}
	dirty := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}
	for _, tc := range []struct {
		main     string
		settings []debug.BuildSetting
		fallback string
		want     string
	}{
		{"(devel)", nil, "1.2.3", "1.2.3"},
		{"", nil, "dev", "dev"},
		{"v0.4.0", nil, "dev", "v0.4.0"},
		{"v0.4.0", nil, "1.2.3", "v0.4.0"},
		{"(devel)", vcs, "dev", "dev (commit 0123456789ab)"},
		{"v0.0.0-20261205003414-b742a14abcde+dirty", dirty, "dev", "v0.0.0-20261205003414-b742a14abcde+dirty (commit 0123456789ab, modified)"},
	} {
		info := &debug.BuildInfo{Main: debug.Module{Path: "github.com/fencegw/fencegw", Version: tc.main}, Settings: tc.settings}
		if got := describeBuild(info, tc.fallback); got != tc.want {
			t.Errorf("describeBuild(%q, %v, %q) = %q, want %q", tc.main, tc.settings, tc.fallback, got, tc.want)
		}
	}
}

// TestVersionFlag: `fencegw --version`, `-v` and `fencegw version` print
// the same line, on stdout.
func TestVersionFlag(t *testing.T) {
	want, _, code := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(want, "fencegw ") || strings.Count(want, "\n") != 1 {
		t.Fatalf("fencegw version: exit %d, %q", code, want)
	}
	for _, flag := range []string{"--version", "-v"} {
		if out, stderr, code := runCLI(t, flag); code != 0 || out != want || stderr != "" {
			t.Errorf("fencegw %s: exit %d, %q %q; want %q", flag, code, out, stderr, want)
		}
	}
}
