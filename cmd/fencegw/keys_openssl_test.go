package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeysGenerateReadByOpenSSL: `fencegw keys generate` writes EdDSA and
// ES256 keys that OpenSSL 3 reads (openssl pkey), private and public, and
// that token inspect --key still takes. Without openssl the test is
// skipped, except on CI (CI=true), where it fails.
func TestKeysGenerateReadByOpenSSL(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("openssl is required on CI: %v", err)
		}
		t.Skipf("no openssl: %v", err)
	}
	dir := t.TempDir()
	for _, alg := range []string{"EdDSA", "ES256"} {
		priv, pub := filepath.Join(dir, alg+".pem"), filepath.Join(dir, alg+".pub.pem")
		if _, stderr, code := runCLI(t, "keys", "generate", "--alg", alg, "--out", priv, "--public-out", pub); code != 0 {
			t.Fatalf("keys generate --alg %s: %d %s", alg, code, stderr)
		}
		for _, args := range [][]string{{"pkey", "-in", priv, "-noout"}, {"pkey", "-pubin", "-in", pub, "-noout"}} {
			if out, err := exec.Command(openssl, args...).CombinedOutput(); err != nil {
				data, _ := os.ReadFile(args[len(args)-2])
				t.Errorf("%s: openssl %s: %v\n%s\n%s", alg, strings.Join(args, " "), err, out, data)
			}
		}
	}
}
