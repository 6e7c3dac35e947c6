package main

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testdemo"
)

// TestDemoQuiet: `fencegw demo --quiet` prints the summary line alone; a
// stray argument is refused. (The story itself is tested in
// cmd/fencegw/internal/demo.)
func TestDemoQuiet(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"demo", "--quiet"}, &out, &errb); code != 0 {
		t.Fatalf("fencegw demo --quiet exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	testdemo.CheckQuiet(t, out.String())
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"demo", "now"}, &out, &errb); code != 2 || out.Len() != 0 {
		t.Fatalf("fencegw demo now: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// TestDemoBinary runs the demo through the built binary: it exits 0 and
// tells the whole story on stdout.
func TestDemoBinary(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, binary, "demo")
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("fencegw demo: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	if errb.Len() != 0 {
		t.Errorf("the demo wrote to stderr: %s", errb.String())
	}
	testdemo.CheckOutput(t, out.String())
}
