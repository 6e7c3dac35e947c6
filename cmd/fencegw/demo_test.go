package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

var (
	demoTraceID = regexp.MustCompile(`\b[0-9a-f]{32}\b`)
	demoStore   = regexp.MustCompile(`embedded store in (\S+);`)
	demoURL     = regexp.MustCompile(`https?://[^\s,;]+`)
)

// checkDemoOutput checks the narrative the demo printed.
func checkDemoOutput(t *testing.T, out string) {
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
	if !demoTraceID.MatchString(out) {
		t.Error("the demo's output shows no 32-hex-digit trace id")
	}
	for _, u := range demoURL.FindAllString(out, -1) {
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
	if m := demoStore.FindStringSubmatch(out); m == nil {
		t.Error("the demo's output does not name its store")
	} else if _, err := os.Stat(m[1]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the demo left its store directory %s behind (stat: %v)", m[1], err)
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// TestDemo runs `fencegw demo` in this process: it exits 0, tells the
// story in fewer than 80 lines, and leaves no goroutine or file behind.
func TestDemo(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var out, errb bytes.Buffer
	start := time.Now()
	if code := run(context.Background(), []string{"demo"}, &out, &errb); code != 0 {
		t.Fatalf("fencegw demo exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the demo took %s, want under 10s", d)
	}
	if errb.Len() != 0 {
		t.Errorf("the demo wrote to stderr: %s", errb.String())
	}
	checkDemoOutput(t, out.String())
}

// TestDemoQuiet: --quiet prints the summary line alone; a stray argument
// is refused.
func TestDemoQuiet(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"demo", "--quiet"}, &out, &errb); code != 0 {
		t.Fatalf("fencegw demo --quiet exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "summary") || !strings.Contains(lines[0], "received 2 emails") {
		t.Fatalf("fencegw demo --quiet printed:\n%s", out.String())
	}
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"demo", "now"}, &out, &errb); code != 2 || out.Len() != 0 {
		t.Fatalf("fencegw demo now: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// TestDemoBinary runs the demo through the built binary.
func TestDemoBinary(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, binary, "demo")
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("fencegw demo: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	checkDemoOutput(t, out.String())
}
