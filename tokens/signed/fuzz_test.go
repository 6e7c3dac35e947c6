package signed

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// FuzzParseKeyPEM: arbitrary input never panics, and whatever parses is a
// valid key that round-trips through its own PEM encoding.
func FuzzParseKeyPEM(f *testing.F) {
	for _, alg := range algs {
		k := mustKey(f, alg)
		priv, _ := k.MarshalPrivatePEM()
		f.Add(priv)
		if pub, err := k.MarshalPublicPEM(); err == nil {
			f.Add(pub)
			f.Add([]byte(strings.Replace(string(pub), "Kid: "+k.ID+"\n", "", 1)))
		}
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(p384)
	f.Add(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	f.Add(pem.EncodeToMemory(&pem.Block{Type: SecretPEMType, Bytes: make([]byte, 31)}))
	f.Add([]byte("-----BEGIN PUBLIC KEY-----\nKid: x\n\nAAAA\n-----END PUBLIC KEY-----\n"))
	f.Add([]byte("not pem"))

	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := ParseKeyPEM(data)
		if err != nil {
			if k != nil {
				t.Fatalf("key %v returned with error %v", k, err)
			}
			return
		}
		if err := k.validate(); err != nil {
			t.Fatalf("parsed an invalid key: %v", err)
		}
		var again []byte
		if k.CanSign() {
			again, err = k.MarshalPrivatePEM()
		} else {
			again, err = k.MarshalPublicPEM()
		}
		if err != nil {
			t.Fatalf("re-encode %v: %v", k, err)
		}
		back, err := ParseKeyPEM(again)
		if err != nil {
			t.Fatalf("re-parse %v: %v", k, err)
		}
		if back.ID != k.ID || back.Alg != k.Alg || back.CanSign() != k.CanSign() || !sameMaterial(back, k) {
			t.Fatalf("round trip changed %v into %v", k, back)
		}
	})
}

// FuzzVerify: arbitrary strings never panic, every refusal wraps
// ErrUnauthenticated without echoing the token, and nothing verifies unless
// its header and claims are exactly those of a token the keyring signed.
func FuzzVerify(f *testing.F) {
	ed := mustKey(f, AlgEdDSA)
	es := mustKey(f, AlgES256)
	hs := mustKey(f, AlgHS256)
	other := mustKey(f, AlgEdDSA)
	r := mustRing(f, ed, es, hs)
	v := mustVerifier(f, r, newClock(t0), WithCacheSize(64))

	signedParts := map[string]Claims{} // header.payload of every signed token → its claims
	add := func(tok string) {
		c, err := v.VerifyClaims(tok)
		if err != nil {
			f.Fatalf("seed token refused: %v", err)
		}
		signedParts[tok[:strings.LastIndexByte(tok, '.')]] = c
		f.Add(tok)
	}
	for _, k := range []*Key{ed, es, hs} {
		s := mustSigner(f, mustRing(f, k))
		add(mustSign(f, s, "node-a", "invoice-sweeper", 1<<53+1, t0))
		add(mustSign(f, s, "node-b", "email:tenant-42", 7, t0))
	}
	payload := claimsJSON(f, t0, nil)
	edPub, _ := ed.MarshalPublicPEM()
	f.Add(signWith(f, other, payload))
	f.Add(signRaw(f, jwt.SigningMethodHS256, edPub, header("HS256", ed.ID), payload))
	f.Add(b64([]byte(header("none", ed.ID))) + "." + b64([]byte(payload)) + ".")
	f.Add(signWith(f, ed, claimsJSON(f, t0, map[string]any{"exp": omit{}})))
	f.Add("")
	f.Add("..")
	f.Add("a.b.c")

	f.Fuzz(func(t *testing.T, tok string) {
		c, err := v.VerifyClaims(tok)
		if err != nil {
			if !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("error %q does not wrap ErrUnauthenticated", err)
			}
			// Messages hold no '.', so a token with one cannot appear in them.
			if strings.Contains(tok, ".") && strings.Contains(err.Error(), tok) {
				t.Fatalf("error %q echoes the token", err)
			}
			return
		}
		i := strings.LastIndexByte(tok, '.')
		want, ok := signedParts[tok[:max(i, 0)]]
		if i < 0 || !ok {
			t.Fatalf("verified a token the keyring never signed: %q → %+v", tok, c)
		}
		if c != want {
			t.Fatalf("claims %+v, want %+v", c, want)
		}
	})
}
