package testkube_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testkube"
)

// TestBinaryWaitsForTheBuild: with a status file, Binary waits while it is
// empty, returns the binary once it appears, and gives up when the build
// reports a failure; without one, a missing binary is an error at once.
func TestBinaryWaitsForTheBuild(t *testing.T) {
	dir := t.TempDir()
	bin, status := filepath.Join(dir, "kube-apiserver"), filepath.Join(dir, "status")
	t.Setenv(testkube.EnvBinary, bin)
	t.Setenv(testkube.EnvStatus, "")
	if _, err := testkube.Binary(); err == nil || !strings.Contains(err.Error(), "no kube-apiserver") {
		t.Fatalf("Binary without a status file = %v", err)
	}

	t.Setenv(testkube.EnvStatus, status)
	if err := os.WriteFile(status, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(500 * time.Millisecond)
		_ = os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
		_ = os.WriteFile(status, []byte("ok\n"), 0o600)
	}()
	if got, err := testkube.Binary(); err != nil || got != bin {
		t.Fatalf("Binary while the build ends = %q, %v", got, err)
	}

	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(status, []byte("failed: no module proxy\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := testkube.Binary(); err == nil || !strings.Contains(err.Error(), "failed: no module proxy") {
		t.Fatalf("Binary after a failed build = %v", err)
	}
}
