package demo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fencegw/fencegw/internal/testutil/testdemo"
)

// TestDemo tells the story: Run succeeds in under 10 s, tells it in fewer
// than 80 lines, and leaves no goroutine or file behind.
func TestDemo(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var out bytes.Buffer
	start := time.Now()
	if err := Run(context.Background(), Options{Out: &out, Version: "test"}); err != nil {
		t.Fatalf("Run: %v\noutput:\n%s", err, out.String())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the demo took %s, want under 10s", d)
	}
	testdemo.CheckOutput(t, out.String())
}

// TestDemoInterrupted: a story cut short fails with the step it was in,
// and still leaves no goroutine or file behind.
func TestDemoInterrupted(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // node-a is frozen by then
	defer cancel()
	var out bytes.Buffer
	err := Run(ctx, Options{Out: &out})
	var f *Failure
	if !errors.As(err, &f) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run = %v, want a *Failure of the deadline\noutput:\n%s", err, out.String())
	}
	if f.Step != "step 7 (node-b takes over)" || f.At < 2*time.Second || !strings.HasPrefix(err.Error(), "t=2.") {
		t.Errorf("failure %q (step %q at %s), want step 7 (node-b takes over) at t=2.0s or so", err, f.Step, f.At)
	}
	m := regexp.MustCompile(`embedded store in (\S+);`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("the story does not name its store:\n%s", out.String())
	}
	if _, err := os.Stat(m[1]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the demo left its store directory %s behind (stat: %v)", m[1], err)
	}
}

// TestDemoQuiet: Quiet prints the summary line alone.
func TestDemoQuiet(t *testing.T) {
	var out bytes.Buffer
	if err := Run(context.Background(), Options{Out: &out, Quiet: true}); err != nil {
		t.Fatalf("Run: %v\noutput:\n%s", err, out.String())
	}
	testdemo.CheckQuiet(t, out.String())
}

// TestDemoSteps: every step has a name of its own.
func TestDemoSteps(t *testing.T) {
	seen := map[string]bool{}
	for i, s := range steps {
		if s.name == "" || s.run == nil || seen[s.name] {
			t.Errorf("step %d: name %q, run set %v: want a unique name and a function", i+1, s.name, s.run != nil)
		}
		seen[s.name] = true
	}
}
