package signed

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"slices"
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
	f.Add(signWith(f, ed, claimsJSON(f, t0, map[string]any{"epoch": omit{}, "EPOCH": 9})))
	f.Add(signWith(f, ed, `{"epoch":9,`+payload[1:]))
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

// FuzzVerifyClaimNames signs arbitrary payloads with a key of the keyring:
// a payload verifies only if no member name differs from a claim the
// Verifier reads only in case and none of those claims appears twice, and
// then its claims are exactly what the members of those exact names say.
// A payload refused for its names does have such a twin or repeat.
func FuzzVerifyClaimNames(f *testing.F) {
	k := mustKey(f, AlgEdDSA)
	v := mustVerifier(f, mustRing(f, k), newClock(t0), WithCacheSize(0))
	good := claimsJSON(f, t0, nil)
	f.Add(good)
	f.Add(claimsJSON(f, t0, map[string]any{"epoch": omit{}, "EPOCH": 5}))
	f.Add(claimsJSON(f, t0, map[string]any{"Epoch": 9}))
	f.Add(claimsJSON(f, t0, map[string]any{"sub": omit{}, "\u017fub": "node-a"}))
	f.Add(claimsJSON(f, t0, map[string]any{"ext": map[string]any{"EPOCH": 9}, "jti": "x"}))
	f.Add(`{"epoch":9,` + good[1:])
	f.Add(strings.Replace(good, `"res"`, `"\u0072es"`, 1))
	f.Add(strings.Replace(good, `"res"`, `"\u0052es"`, 1))
	f.Add(`[` + good + `]`)

	f.Fuzz(func(t *testing.T, payload string) {
		c, err := v.VerifyClaims(signWith(t, k, payload))
		members, odd := exactMembers(payload)
		if err != nil {
			if !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("error %q does not wrap ErrUnauthenticated", err)
			}
			if msg := err.Error(); (strings.Contains(msg, "only in case") || strings.Contains(msg, "more than once")) && odd == "" {
				t.Fatalf("refused for its claim names (%v), but it has no twin or repeat: %q", err, payload)
			}
			return
		}
		if odd != "" {
			t.Fatalf("verified despite %s: %q → %+v", odd, payload, c)
		}
		var (
			epoch    int64
			sub, res string
			iat, exp jwt.NumericDate
		)
		for name, dst := range map[string]any{"epoch": &epoch, "sub": &sub, "res": &res, "iat": &iat, "exp": &exp} {
			if err := json.Unmarshal(members[name], dst); err != nil {
				t.Fatalf("verified, but member %s does not decode alone: %v: %q", name, err, payload)
			}
		}
		if c.Epoch != epoch || c.Holder != sub || c.Resource != res || !c.IssuedAt.Equal(iat.Time) || !c.Expires.Equal(exp.Time) {
			t.Fatalf("claims %+v, but the exact members say epoch %d sub %q res %q iat %v exp %v: %q",
				c, epoch, sub, res, iat.Time, exp.Time, payload)
		}
	})
}

// exactMembers reads the top-level members of the JSON object payload by
// their exact names (the last of a repeat), and says what makes its names
// odd for a Verifier: a name that matches a read claim only by case
// folding, or a read claim given twice ("" when neither).
func exactMembers(payload string) (map[string]json.RawMessage, string) {
	dec := json.NewDecoder(strings.NewReader(payload))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, ""
	}
	members := map[string]json.RawMessage{}
	odd := ""
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, odd
		}
		name, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, odd
		}
		for _, claim := range claimNames {
			if name != claim && strings.EqualFold(name, claim) {
				odd = "a case twin of " + claim
			}
		}
		if _, dup := members[name]; dup && slices.Contains(claimNames[:], name) {
			odd = name + " given twice"
		}
		members[name] = raw
	}
	return members, odd
}
