// Package testdemo checks the narrative of `fencegw demo` (package
// cmd/fencegw/internal/demo), for the tests of the demo and of the command.
package testdemo

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
)

var (
	traceID = regexp.MustCompile(`\b[0-9a-f]{32}\b`)
	store   = regexp.MustCompile(`embedded store in (\S+);`)
	anyURL  = regexp.MustCompile(`https?://[^\s,;]+`)
)

// CheckOutput checks the narrative a whole demo printed: fewer than 80
// lines, each stamped; the 412 with both epochs and a trace id, the fence
// on grant and node-a stepping down; every address on 127.0.0.1; the
// summary last; and the store's directory, which it names, removed.
func CheckOutput(t testing.TB, out string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) >= 80 {
		t.Errorf("the demo printed %d lines, want fewer than 80", len(lines))
	}
	for _, want := range []string{"412", "epoch 2", "presented epoch 1, current epoch 2", "steps down", "fence on grant"} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo's output lacks %q", want)
		}
	}
	if !traceID.MatchString(out) {
		t.Error("the demo's output shows no 32-hex-digit trace id")
	}
	for _, u := range anyURL.FindAllString(out, -1) {
		if !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Errorf("the demo served on %s, not on 127.0.0.1", u)
		}
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, "t=") {
			t.Errorf("line %d has no relative timestamp: %q", i+1, l)
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "summary") ||
		!strings.Contains(last, "received 2 emails") || !strings.Contains(last, "none from node-a after the takeover") {
		t.Errorf("the last line is not the summary: %q", last)
	}
	if m := store.FindStringSubmatch(out); m == nil {
		t.Error("the demo's output does not name its store")
	} else if _, err := os.Stat(m[1]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the demo left its store directory %s behind (stat: %v)", m[1], err)
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// CheckQuiet checks the output of a quiet demo: the summary line alone.
func CheckQuiet(t testing.TB, out string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "summary") || !strings.Contains(lines[0], "received 2 emails") {
		t.Errorf("the quiet demo printed:\n%s", out)
	}
}
