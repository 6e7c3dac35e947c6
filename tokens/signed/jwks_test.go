package signed

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func sha256Sum(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

func TestJWKS(t *testing.T) {
	ed := mustKey(t, AlgEdDSA)
	es := mustKey(t, AlgES256)
	hs := mustKey(t, AlgHS256)
	r := mustRing(t, ed, es, hs)
	raw, err := r.JWKS()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), hs.ID) || strings.Contains(string(raw), b64(hs.secret)) || strings.Contains(string(raw), `"k"`) || strings.Contains(string(raw), `"d"`) {
		t.Fatalf("JWKS leaks a secret or private key: %s", raw)
	}
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatalf("JWKS is not JSON: %v\n%s", err, raw)
	}
	if len(set.Keys) != 2 {
		t.Fatalf("JWKS has %d keys, want 2: %s", len(set.Keys), raw)
	}

	// Each published key verifies a token of its signer, decoded by hand.
	for _, j := range set.Keys {
		if j["use"] != "sig" {
			t.Errorf("key %s: use %q", j["kid"], j["use"])
		}
		x, err := base64.RawURLEncoding.DecodeString(j["x"])
		if err != nil {
			t.Fatalf("x: %v", err)
		}
		var (
			pub    any
			signer *Key
		)
		switch j["kty"] {
		case "OKP":
			if j["crv"] != "Ed25519" || j["alg"] != AlgEdDSA || j["kid"] != ed.ID || len(x) != ed25519.PublicKeySize {
				t.Fatalf("OKP key: %v", j)
			}
			pub, signer = ed25519.PublicKey(x), ed
		case "EC":
			y, err := base64.RawURLEncoding.DecodeString(j["y"])
			if err != nil {
				t.Fatalf("y: %v", err)
			}
			if j["crv"] != "P-256" || j["alg"] != AlgES256 || j["kid"] != es.ID || len(x) != 32 || len(y) != 32 {
				t.Fatalf("EC key: %v", j)
			}
			p, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
			if err != nil {
				t.Fatal(err)
			}
			pub, signer = p, es
		default:
			t.Fatalf("unexpected kty in %v", j)
		}
		// The kid is the RFC 7638 thumbprint of the published members.
		members := map[string]string{"crv": j["crv"], "kty": j["kty"], "x": j["x"]}
		if j["y"] != "" {
			members["y"] = j["y"]
		}
		if want := thumbprintOf(t, members); j["kid"] != want {
			t.Errorf("kid %s is not the thumbprint %s", j["kid"], want)
		}

		ring := mustRing(t, signer)
		tok := mustSign(t, mustSigner(t, ring), "node-a", "r", 9, t0)
		parsed, err := jwt.Parse(tok, func(tk *jwt.Token) (any, error) { return pub, nil },
			jwt.WithValidMethods([]string{j["alg"]}), jwt.WithTimeFunc(func() time.Time { return t0 }))
		if err != nil || !parsed.Valid {
			t.Errorf("token of %s does not verify with its JWKS key: %v", j["kid"], err)
		}
	}

	// Only secrets: an empty set, not null.
	onlyHS, err := mustRing(t, hs).JWKS()
	if err != nil || string(onlyHS) != `{"keys":[]}` {
		t.Errorf("HS256-only JWKS = %s, %v", onlyHS, err)
	}
}
