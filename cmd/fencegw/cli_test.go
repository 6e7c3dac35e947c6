package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/wire"
)

func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), exitCode(err)
}

// TestLeaseAndTokenCommands drives the lease API and verifies the issued
// token with the CLI, against a gateway signing with a generated key file.
func TestLeaseAndTokenCommands(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "signing.pem")
	pubFile := filepath.Join(dir, "signing.pub.pem")
	if _, stderr, code := runCLI(t, "keys", "generate", "--out", keyFile, "--public-out", pubFile); code != 0 {
		t.Fatalf("keys generate: %d %s", code, stderr)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode: %v %v", fi, err)
	}
	if _, _, code := runCLI(t, "keys", "generate", "--out", keyFile); code == 0 {
		t.Fatal("keys generate overwrote an existing file")
	}
	cfg := filepath.Join(dir, "gw.yaml")
	os.WriteFile(cfg, []byte("signing:\n  key_file: "+keyFile+"\nroutes:\n  - prefix: /w/\n    upstream: http://127.0.0.1:9\n"), 0o600)
	gw := start(t, "--config", cfg, "--store", filepath.Join(dir, "s.db"))

	out, stderr, code := runCLI(t, "lease", "acquire", "jobs", "--holder", "node-a", "--ttl", "30s", "--api", gw.api)
	if code != 0 {
		t.Fatalf("lease acquire: %d %s", code, stderr)
	}
	var l struct {
		Epoch wire.Epoch `json:"epoch"`
		Token string     `json:"token"`
	}
	if err := json.Unmarshal([]byte(out), &l); err != nil || l.Epoch != 1 || l.Token == "" {
		t.Fatalf("lease acquire printed %q: %v", out, err)
	}
	if out, stderr, code := runCLI(t, "lease", "acquire", "delayed", "--holder", "node-a", "--lock-delay", "5s", "--api", gw.api); code != 0 ||
		!strings.Contains(out, `"lock_delay_seconds":5`) {
		t.Fatalf("lease acquire --lock-delay: %d %s %s", code, out, stderr)
	}
	if _, stderr, code := runCLI(t, "lease", "acquire", "jobs", "--holder", "node-b", "--api", gw.api); code != 1 ||
		!strings.Contains(stderr, "409") || !strings.Contains(stderr, "node-a") {
		t.Fatalf("acquire while held: %d %s", code, stderr)
	}
	if out, _, code := runCLI(t, "lease", "renew", "jobs", "--holder", "node-a", "--epoch", "1", "--api", gw.api); code != 0 ||
		!strings.Contains(out, `"epoch":"1"`) {
		t.Fatalf("lease renew: %d %s", code, out)
	}
	if out, _, code := runCLI(t, "lease", "get", "jobs", "--api", gw.api); code != 0 || !strings.Contains(out, `"holder":"node-a"`) {
		t.Fatalf("lease get: %d %s", code, out)
	}
	// The token verifies with the published keys and with the public key file.
	for _, extra := range [][]string{{"--api", gw.api}, {"--key", pubFile}} {
		out, _, code := runCLI(t, append([]string{"token", "inspect", l.Token}, extra...)...)
		if code != 0 || !strings.Contains(out, `verified: key`) || !strings.Contains(out, `resource "jobs", epoch 1`) {
			t.Fatalf("token inspect %v: %d\n%s", extra, code, out)
		}
	}
	tampered := l.Token[:len(l.Token)-3] + "AAA"
	if out, _, code := runCLI(t, "token", "inspect", tampered, "--api", gw.api); code != 1 || !strings.Contains(out, "NOT VERIFIED") {
		t.Fatalf("tampered token inspect: %d\n%s", code, out)
	}
	if _, _, code := runCLI(t, "lease", "release", "jobs", "--holder", "node-a", "--epoch", "1", "--api", gw.api); code != 0 {
		t.Fatalf("lease release: %d", code)
	}
}

// TestAPIKeyCommand: the key is alone on stdout, and the api_keys entry on
// stderr holds its SHA-256. (It asserted the old output, where the key
// stood in a comment of the YAML on stdout.)
func TestAPIKeyCommand(t *testing.T) {
	out, stderr, code := runCLI(t, "keys", "api-key", "--name", "sweeper", "--leases", "invoice-*,report")
	if code != 0 {
		t.Fatalf("%d %s", code, stderr)
	}
	key := regexp.MustCompile(`^(fgw_\S+)\n$`).FindStringSubmatch(out)
	hash := regexp.MustCompile(`sha256: "?([0-9a-f]{64})"?`).FindStringSubmatch(stderr)
	if key == nil || hash == nil {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", out, stderr)
	}
	sum := sha256.Sum256([]byte(key[1]))
	if hex.EncodeToString(sum[:]) != hash[1] || !strings.Contains(stderr, `leases: [invoice-*, report]`) {
		t.Fatalf("stderr:\n%s", stderr)
	}
}
