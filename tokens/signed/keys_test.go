package signed

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGenerateKey(t *testing.T) {
	for _, alg := range append(algs, "") {
		k := mustKey(t, alg)
		want := alg
		if alg == "" {
			want = AlgEdDSA
		}
		if k.Alg != want || !k.CanSign() || k.IsSymmetric() != (want == AlgHS256) {
			t.Errorf("GenerateKey(%q) = %v, CanSign %v, IsSymmetric %v", alg, k, k.CanSign(), k.IsSymmetric())
		}
		if err := k.validate(); err != nil {
			t.Errorf("GenerateKey(%q): %v", alg, err)
		}
		if want != AlgHS256 {
			if tp, _ := k.thumbprint(); k.ID != tp {
				t.Errorf("GenerateKey(%q): kid %q is not the thumbprint %q", alg, k.ID, tp)
			}
		} else if tp, _ := k.thumbprint(); k.ID == tp || len(k.ID) != 11 {
			t.Errorf("HS256 kid %q: want 8 random bytes, not the thumbprint", k.ID)
		}
	}
	if k1, k2 := mustKey(t, AlgEdDSA), mustKey(t, AlgEdDSA); k1.ID == k2.ID {
		t.Error("two generated keys share a kid")
	}
	for _, alg := range []string{"RS256", "ES384", "none", "HS512"} {
		if _, err := GenerateKey(alg); !errors.Is(err, ErrUnsupportedKey) {
			t.Errorf("GenerateKey(%q): %v, want ErrUnsupportedKey", alg, err)
		}
	}
}

func TestPublic(t *testing.T) {
	for _, alg := range algs {
		k := mustKey(t, alg)
		p := k.Public()
		if p.ID != k.ID || p.Alg != k.Alg {
			t.Errorf("%s: Public() = %v", k, p)
		}
		if alg == AlgHS256 {
			if p != k || !p.IsSymmetric() {
				t.Errorf("%s: Public() should be the secret itself, flagged symmetric", k)
			}
			continue
		}
		if p.CanSign() || p.signer != nil {
			t.Errorf("%s: Public() holds private material", k)
		}
		if _, err := p.MarshalPrivatePEM(); err == nil {
			t.Errorf("%s: MarshalPrivatePEM of a public key succeeded", k)
		}
	}
}

// TestThumbprintRFC8037 checks the RFC 7638 thumbprint against RFC 8037
// appendix A (A.1 key, A.3 thumbprint) and the Ed25519 signing against A.4.
func TestThumbprintRFC8037(t *testing.T) {
	d, _ := base64.RawURLEncoding.DecodeString("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A")
	priv := ed25519.NewKeyFromSeed(d)
	if x := b64(priv.Public().(ed25519.PublicKey)); x != "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo" {
		t.Fatalf("x = %s", x)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ParseKeyPEM(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	if err != nil {
		t.Fatal(err)
	}
	if k.ID != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" || k.Alg != AlgEdDSA {
		t.Errorf("parsed %v, want kid kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k", k)
	}
	sig, err := k.method().Sign("eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc", k.signingMaterial())
	if err != nil {
		t.Fatal(err)
	}
	if got := b64(sig); got != "hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg" {
		t.Errorf("signature = %s", got)
	}
}

func TestPEMRoundTrip(t *testing.T) {
	for _, alg := range algs {
		t.Run(alg, func(t *testing.T) {
			k := mustKey(t, alg)
			priv, err := k.MarshalPrivatePEM()
			if err != nil {
				t.Fatal(err)
			}
			// Only an HS256 secret carries headers: the id and algorithm of
			// an EdDSA or ES256 key follow from the key (OpenSSL refuses
			// headers on a key).
			for _, h := range []string{"Kid: " + k.ID, "Alg: " + alg} {
				if strings.Contains(string(priv), h) != (alg == AlgHS256) {
					t.Errorf("PEM header %q present: %v, want %v:\n%s", h, !(alg == AlgHS256), alg == AlgHS256, priv)
				}
			}
			back, err := ParseKeyPEM(priv)
			if err != nil {
				t.Fatal(err)
			}
			if back.ID != k.ID || back.Alg != k.Alg || !back.CanSign() || !sameMaterial(back, k) {
				t.Errorf("round trip: %v, want %v", back, k)
			}
			// A token signed by the re-read key verifies with the original.
			tok := mustSign(t, mustSigner(t, mustRing(t, back)), "h", "r", 1, t0)
			if _, err := mustVerifier(t, mustRing(t, nil, k), newClock(t0)).VerifyClaims(tok); err != nil {
				t.Errorf("token of the re-read key: %v", err)
			}

			path := filepath.Join(t.TempDir(), "key.pem")
			if err := os.WriteFile(path, priv, 0o600); err != nil {
				t.Fatal(err)
			}
			loaded, err := LoadKeyFile(path)
			if err != nil || loaded.ID != k.ID || !sameMaterial(loaded, k) {
				t.Errorf("LoadKeyFile: %v, %v", loaded, err)
			}

			if alg == AlgHS256 {
				if _, err := k.MarshalPublicPEM(); err == nil {
					t.Error("MarshalPublicPEM of an HS256 secret succeeded")
				}
				return
			}
			pub, err := k.MarshalPublicPEM()
			if err != nil {
				t.Fatal(err)
			}
			pk, err := ParseKeyPEM(pub)
			if err != nil {
				t.Fatal(err)
			}
			if pk.ID != k.ID || pk.Alg != alg || pk.CanSign() || !sameMaterial(pk, k) {
				t.Errorf("public round trip: %v", pk)
			}
		})
	}
}

func TestParseKeyPEMWithoutHeaders(t *testing.T) {
	es, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sec1, _ := x509.MarshalECPrivateKey(es)
	pkix, _ := x509.MarshalPKIXPublicKey(&es.PublicKey)
	for name, block := range map[string]*pem.Block{
		"EC PRIVATE KEY": {Type: "EC PRIVATE KEY", Bytes: sec1},
		"PUBLIC KEY":     {Type: "PUBLIC KEY", Bytes: pkix},
	} {
		k, err := ParseKeyPEM(pem.EncodeToMemory(block))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Independent RFC 7638 thumbprint: json.Marshal of a map sorts the
		// members and adds no whitespace.
		j, _ := publicJWK(k)
		want := thumbprintOf(t, map[string]string{"crv": j.Crv, "kty": j.Kty, "x": j.X, "y": j.Y})
		if k.Alg != AlgES256 || k.ID != want {
			t.Errorf("%s: %v, want ES256 kid %s", name, k, want)
		}
	}
	secret := make([]byte, 40)
	rand.Read(secret)
	k, err := ParseKeyPEM(pem.EncodeToMemory(&pem.Block{Type: SecretPEMType, Bytes: secret}))
	if err != nil {
		t.Fatal(err)
	}
	if want := thumbprintOf(t, map[string]string{"k": b64(secret), "kty": "oct"}); k.Alg != AlgHS256 || k.ID != want {
		t.Errorf("secret: %v, want HS256 kid %s", k, want)
	}
}

func TestParseKeyPEMRefuses(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaPKCS8, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	rsaPKIX, _ := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p384PKCS8, _ := x509.MarshalPKCS8PrivateKey(p384)
	p384SEC1, _ := x509.MarshalECPrivateKey(p384)
	x25519, _ := ecdh.X25519().GenerateKey(rand.Reader)
	x25519PKIX, _ := x509.MarshalPKIXPublicKey(x25519.PublicKey())
	ed := mustKey(t, AlgEdDSA)
	edPEM, _ := ed.MarshalPrivatePEM()
	edPub, _ := ed.MarshalPublicPEM()
	short := pem.EncodeToMemory(&pem.Block{Type: SecretPEMType, Bytes: make([]byte, MinSecretLen-1)})

	enc := func(typ string, der []byte, headers map[string]string) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: typ, Headers: headers, Bytes: der})
	}
	for _, tc := range []struct {
		name        string
		data        []byte
		unsupported bool
		reason      string
	}{
		{"RSA PKCS#8", enc("PRIVATE KEY", rsaPKCS8, nil), true, "RSA"},
		{"RSA PKIX", enc("PUBLIC KEY", rsaPKIX, nil), true, "RSA"},
		{"RSA PKCS#1", enc("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey), nil), true, "RSA"},
		{"P-384 PKCS#8", enc("PRIVATE KEY", p384PKCS8, nil), true, "P-384"},
		{"P-384 SEC 1", enc("EC PRIVATE KEY", p384SEC1, nil), true, "P-384"},
		{"X25519", enc("PUBLIC KEY", x25519PKIX, nil), true, "X25519"},
		{"short secret", short, true, "at least 32"},
		{"encrypted", enc("PRIVATE KEY", []byte{1}, map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-128-CBC,00"}), true, "encrypted"},
		{"certificate", enc("CERTIFICATE", []byte{1}, nil), true, "CERTIFICATE"},
		// (The encodings carry no headers: these add them as older files had.)
		{"alg header mismatch", withHeaders(edPEM, ed.ID, "ES256"), false, "does not match"},
		{"alg header HS256 on a public key", withHeaders(edPub, ed.ID, "HS256"), false, "does not match"},
		{"bad kid header", withHeaders(edPEM, "a b", "EdDSA"), false, "key id"},
		{"two blocks", append(append([]byte{}, edPEM...), edPub...), false, "more than one"},
		{"no PEM", []byte("hello"), false, "no PEM block"},
		{"empty", nil, false, "no PEM block"},
		{"garbage DER", enc("PRIVATE KEY", []byte("garbage"), nil), false, "PRIVATE KEY block"},
	} {
		k, err := ParseKeyPEM(tc.data)
		if err == nil {
			t.Errorf("%s: parsed %v", tc.name, k)
			continue
		}
		if errors.Is(err, ErrUnsupportedKey) != tc.unsupported || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: error %q, want ErrUnsupportedKey=%v naming %q", tc.name, err, tc.unsupported, tc.reason)
		}
	}

	if _, err := LoadKeyFile(filepath.Join(t.TempDir(), "missing.pem")); err == nil {
		t.Error("LoadKeyFile of a missing file succeeded")
	}
	big := filepath.Join(t.TempDir(), "big.pem")
	os.WriteFile(big, make([]byte, maxKeyFileSize+1), 0o600)
	if _, err := LoadKeyFile(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("LoadKeyFile of a big file: %v", err)
	}
}

func TestNewKeyring(t *testing.T) {
	ed := mustKey(t, AlgEdDSA)
	es := mustKey(t, AlgES256)
	hs := mustKey(t, AlgHS256)

	r := mustRing(t, ed, ed.Public(), es, hs, es.Public())
	if got := r.KeyIDs(); len(got) != 3 || got[0] != ed.ID || got[1] != es.ID || got[2] != hs.ID {
		t.Errorf("KeyIDs = %v", got)
	}
	if r.SigningKeyID() != ed.ID {
		t.Errorf("SigningKeyID = %q", r.SigningKeyID())
	}
	if k, _ := r.lookup(es.ID); k.CanSign() {
		t.Error("a private key given for verification kept its private half")
	}

	// The keyring copies keys: renaming the caller's key changes nothing.
	k := mustKey(t, AlgEdDSA)
	r2 := mustRing(t, k)
	id := k.ID
	k.ID = "renamed"
	if r2.SigningKeyID() != id {
		t.Error("keyring shares the caller's Key")
	}

	clash := ed.Public()
	clash.ID = es.ID
	wrongAlg := mustKey(t, AlgEdDSA)
	wrongAlg.Alg = AlgES256
	sameKidOtherSecret := mustKey(t, AlgHS256)
	sameKidOtherSecret.ID = hs.ID
	for name, err := range map[string]error{
		"no keys":                    second(NewKeyring(nil)),
		"public signing key":         second(NewKeyring(ed.Public())),
		"nil verification key":       second(NewKeyring(ed, nil)),
		"key literal":                second(NewKeyring(&Key{ID: "x", Alg: AlgEdDSA})),
		"alg changed":                second(NewKeyring(wrongAlg)),
		"duplicate kid":              second(NewKeyring(ed, es.Public(), clash)),
		"duplicate kid, secret":      second(NewKeyring(ed, hs, sameKidOtherSecret)),
		"kid clash with signing key": second(NewKeyring(es, clash)),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func thumbprintOf(t *testing.T, members map[string]string) string {
	t.Helper()
	for k, v := range members {
		if v == "" {
			delete(members, k)
		}
	}
	b, err := jsonMarshal(members)
	if err != nil {
		t.Fatal(err)
	}
	return b64(sha256Sum(b))
}

// withHeaders returns the one PEM block of data with the headers Kid and
// Alg, as fencegw wrote every key before.
func withHeaders(data []byte, kid, alg string) []byte {
	b, _ := pem.Decode(data)
	b.Headers = map[string]string{KeyIDHeader: kid, AlgHeader: alg}
	return pem.EncodeToMemory(b)
}
