package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigCommands(t *testing.T) {
	dir := t.TempDir()
	example, stderr, code := runCLI(t, "config", "example")
	if code != 0 || !strings.Contains(example, "routes:") {
		t.Fatalf("config example: %d %s", code, stderr)
	}
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte(example), 0o600)
	if out, stderr, code := runCLI(t, "config", "validate", good); code != 0 || !strings.Contains(out, "valid") {
		t.Fatalf("validate the example: %d %s %s", code, out, stderr)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("routes:\n  - prefix: /a/\n    upstream: http://a\n  - prefix: /b/\n    upstream: nope\n"), 0o600)
	if _, stderr, code := runCLI(t, "config", "validate", bad); code == 0 ||
		!strings.Contains(stderr, "routes[1].upstream: not an absolute http(s) URL") {
		t.Fatalf("validate a bad file: %d %s", code, stderr)
	}
	if _, _, code := runCLI(t, "config", "validate", filepath.Join(dir, "missing.yaml")); code == 0 {
		t.Fatal("validate a missing file succeeded")
	}
}
