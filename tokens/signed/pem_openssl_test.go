package signed

import (
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestPEMReadByOpenSSL: the PEM of an EdDSA or ES256 key, private and
// public, is the standard form that OpenSSL 3 reads (`openssl pkey`), and
// reading it back derives the same id and algorithm. Without openssl the
// test is skipped, except on CI (CI=true), where it fails.
func TestPEMReadByOpenSSL(t *testing.T) {
	openssl := lookOpenSSL(t)
	dir := t.TempDir()
	for _, alg := range []string{AlgEdDSA, AlgES256} {
		k := mustKey(t, alg)
		priv, err := k.MarshalPrivatePEM()
		if err != nil {
			t.Fatal(err)
		}
		pub, err := k.MarshalPublicPEM()
		if err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string][]byte{"private": priv, "public": pub} {
			file := filepath.Join(dir, alg+"-"+name+".pem")
			if err := os.WriteFile(file, data, 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"pkey", "-in", file, "-noout"}
			if name == "public" {
				args = []string{"pkey", "-pubin", "-in", file, "-noout"}
			}
			if out, err := exec.Command(openssl, args...).CombinedOutput(); err != nil {
				t.Errorf("%s %s key: openssl %v: %v\n%s\n%s", alg, name, args, err, out, data)
			}
			back, err := LoadKeyFile(file)
			if err != nil || back.ID != k.ID || back.Alg != alg || !sameMaterial(back, k) {
				t.Errorf("%s %s key read back: %v, %v; want %v", alg, name, back, err, k)
			}
		}
	}
}

// TestPEMWithHeadersStillLoads: key files written with the Kid and Alg
// headers (as fencegw keys generate did before its PEM became OpenSSL's)
// load as before, with the Kid header's id even when it is no thumbprint.
func TestPEMWithHeadersStillLoads(t *testing.T) {
	for _, alg := range algs {
		k := mustKey(t, alg)
		for _, kid := range []string{k.ID, "rotated-2025"} {
			priv, err := k.MarshalPrivatePEM()
			if err != nil {
				t.Fatal(err)
			}
			block, _ := pem.Decode(priv)
			block.Headers = map[string]string{KeyIDHeader: kid, AlgHeader: alg}
			old := pem.EncodeToMemory(block)
			file := filepath.Join(t.TempDir(), "old.pem")
			if err := os.WriteFile(file, old, 0o600); err != nil {
				t.Fatal(err)
			}
			back, err := LoadKeyFile(file)
			if err != nil || back.ID != kid || back.Alg != alg || !back.CanSign() || !sameMaterial(back, k) {
				t.Fatalf("%s key with headers Kid %s: %v, %v", alg, kid, back, err)
			}
			// Encoded again, a custom id keeps its Kid header; a derivable one
			// needs none.
			again, err := back.MarshalPrivatePEM()
			if err != nil {
				t.Fatal(err)
			}
			if b2, err := ParseKeyPEM(again); err != nil || b2.ID != kid || b2.Alg != alg {
				t.Errorf("%s key with Kid %s, encoded again: %v, %v\n%s", alg, kid, b2, err, again)
			}
		}
	}
}

// lookOpenSSL returns the openssl binary's path, or skips the test without
// it (fails it on CI).
func lookOpenSSL(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("openssl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("openssl is required on CI: %v", err)
		}
		t.Skipf("no openssl: %v", err)
	}
	return path
}
