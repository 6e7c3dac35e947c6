package signed

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
	"github.com/golang-jwt/jwt/v5"
)

var algs = []string{AlgEdDSA, AlgES256, AlgHS256}

func TestRoundTrip(t *testing.T) {
	for _, alg := range algs {
		t.Run(alg, func(t *testing.T) {
			k := mustKey(t, alg)
			r := mustRing(t, k)
			s := mustSigner(t, r)
			clock := newClock(t0.Add(10 * time.Second))
			v := mustVerifier(t, r, clock)

			now := t0.Add(500 * time.Millisecond)
			tok, exp, err := s.Sign("node-a", "invoice-sweeper", 42, now)
			if err != nil {
				t.Fatal(err)
			}
			if want := t0.Add(testLifetime); !exp.Equal(want) {
				t.Errorf("exp = %v, want %v", exp, want)
			}

			// Header: alg, kid; payload: single-string aud, integer epoch.
			p := segments(t, tok)
			var h map[string]any
			if err := json.Unmarshal(decodeSegment(t, p[0]), &h); err != nil {
				t.Fatal(err)
			}
			if h["alg"] != alg || h["kid"] != k.ID {
				t.Errorf("header = %v, want alg %s kid %s", h, alg, k.ID)
			}
			payload := string(decodeSegment(t, p[1]))
			for _, want := range []string{`"aud":"fencegw-upstream"`, `"epoch":42`, `"res":"invoice-sweeper"`, `"sub":"node-a"`, `"iss":"fencegw"`} {
				if !strings.Contains(payload, want) {
					t.Errorf("payload %s lacks %s", payload, want)
				}
			}

			var fv tokens.Verifier = v
			got, err := fv.Verify(context.Background(), tok)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if got.Epoch != 42 || got.Resource != "invoice-sweeper" || got.Holder != "node-a" || !got.Expires.Equal(exp) {
				t.Errorf("Verify = %+v, want epoch 42, invoice-sweeper, node-a, expires %v", got, exp)
			}
			c, err := v.VerifyClaims(tok)
			if err != nil {
				t.Fatalf("VerifyClaims: %v", err)
			}
			want := Claims{Holder: "node-a", Resource: "invoice-sweeper", Epoch: 42, IssuedAt: t0, Expires: exp, KeyID: k.ID}
			if c.Holder != want.Holder || c.Resource != want.Resource || c.Epoch != want.Epoch ||
				!c.IssuedAt.Equal(want.IssuedAt) || !c.Expires.Equal(want.Expires) || c.KeyID != want.KeyID {
				t.Errorf("VerifyClaims = %+v, want %+v", c, want)
			}
		})
	}
}

func TestEpochAbove2To53RoundTripsExactly(t *testing.T) {
	k := mustKey(t, AlgEdDSA)
	r := mustRing(t, k)
	s := mustSigner(t, r)
	v := mustVerifier(t, r, newClock(t0), WithCacheSize(0))
	for _, epoch := range []int64{1<<53 + 1, 1<<62 + 3, math.MaxInt64} {
		tok := mustSign(t, s, "node-a", "r", epoch, t0)
		if payload := string(decodeSegment(t, segments(t, tok)[1])); !strings.Contains(payload, `"epoch":`+itoa(epoch)) {
			t.Errorf("payload %s does not carry epoch %d as a JSON integer", payload, epoch)
		}
		c, err := v.VerifyClaims(tok)
		if err != nil {
			t.Fatalf("epoch %d: %v", epoch, err)
		}
		if c.Epoch != epoch {
			t.Errorf("epoch %d came back as %d", epoch, c.Epoch)
		}
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// refusal is one token the verifier must refuse.
type refusal struct {
	name      string
	token     string
	verifier  *Verifier // nil: the default one
	malformed bool      // also wraps tokens.ErrMalformedToken
	reason    string    // substring of the error message
}

func TestVerifyRefuses(t *testing.T) {
	ed := mustKey(t, AlgEdDSA)
	es := mustKey(t, AlgES256)
	hs := mustKey(t, AlgHS256)
	other := mustKey(t, AlgEdDSA)
	// The keyring holds EdDSA (signing), ES256 and HS256 keys, so algorithm
	// confusion is refused by the per-key pin, not merely because an
	// algorithm is absent from the keyring.
	r := mustRing(t, ed, es.Public(), hs)
	v := mustVerifier(t, r, newClock(t0), WithCacheSize(0))
	edOnly := mustVerifier(t, mustRing(t, ed), newClock(t0), WithCacheSize(0))

	payload := claimsJSON(t, t0, nil)
	good := signWith(t, ed, payload)
	if _, err := v.VerifyClaims(good); err != nil {
		t.Fatalf("good token refused: %v", err)
	}
	p := segments(t, good)
	sig := decodeSegment(t, p[2])

	tamperedPayload := p[0] + "." + b64([]byte(claimsJSON(t, t0, map[string]any{"epoch": int64(8)}))) + "." + p[2]
	flipped := append([]byte(nil), sig...)
	flipped[10] ^= 0x01
	tamperedSig := p[0] + "." + p[1] + "." + b64(flipped)

	// Non-canonical base64url: same signature bytes, unused low bits set.
	last := p[2][len(p[2])-1]
	alphabet := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	nonCanonical := p[0] + "." + p[1] + "." + p[2][:len(p[2])-1] + string(alphabet[strings.IndexByte(alphabet, last)|1])

	edPubPEM, err := ed.MarshalPublicPEM()
	if err != nil {
		t.Fatal(err)
	}
	esPubPEM, err := es.MarshalPublicPEM()
	if err != nil {
		t.Fatal(err)
	}
	hmacWith := func(secret []byte, kid string) string {
		return signRaw(t, jwt.SigningMethodHS256, secret, header("HS256", kid), payload)
	}
	claims := func(o map[string]any) string { return signWith(t, ed, claimsJSON(t, t0, o)) }
	// prepend signs the claims of o with the members in raw written first,
	// so that a claim can be given twice.
	prepend := func(raw string, o map[string]any) string {
		return signWith(t, ed, "{"+raw+","+claimsJSON(t, t0, o)[1:])
	}
	expiredAt := t0.Add(-testLifetime - DefaultLeeway - time.Second)

	cases := []refusal{
		{name: "tampered payload", token: tamperedPayload, reason: "signature invalid"},
		{name: "tampered signature", token: tamperedSig, reason: "signature invalid"},
		{name: "truncated signature", token: p[0] + "." + p[1] + "." + p[2][:40], reason: "signature invalid"},
		{name: "empty signature", token: p[0] + "." + p[1] + ".", reason: "signature invalid"},
		{name: "non-canonical base64 signature", token: nonCanonical, malformed: true, reason: "base64url"},
		{name: "alg none without signature", token: b64([]byte(header("none", ed.ID))) + "." + p[1] + ".", reason: "algorithm none not accepted"},
		{name: "alg none with signature", token: b64([]byte(header("none", ed.ID))) + "." + p[1] + "." + p[2], reason: "algorithm none not accepted"},
		{name: "alg None", token: b64([]byte(header("None", ed.ID))) + "." + p[1] + ".", reason: "unsupported algorithm"},
		{name: "alg missing", token: b64([]byte(`{"kid":"`+ed.ID+`"}`)) + "." + p[1] + "." + p[2], reason: "unsupported algorithm"},
		{name: "HS256 keyed with raw Ed25519 public key", token: hmacWith([]byte(ed.public.(ed25519.PublicKey)), ed.ID), reason: "does not match the EdDSA key"},
		{name: "HS256 keyed with Ed25519 public PEM", token: hmacWith(edPubPEM, ed.ID), reason: "does not match the EdDSA key"},
		{name: "HS256 keyed with P-256 public PEM", token: hmacWith(esPubPEM, es.ID), reason: "does not match the ES256 key"},
		{name: "HS256 with public key, HS256 not in keyring", token: hmacWith(edPubPEM, ed.ID), verifier: edOnly, reason: "algorithm HS256 not accepted"},
		{name: "HS256 secret under the EdDSA kid", token: hmacWith(hs.secret, ed.ID), reason: "does not match the EdDSA key"},
		{name: "ES256 signature under the EdDSA kid", token: signRaw(t, jwt.SigningMethodES256, es.signer, header("ES256", ed.ID), payload), reason: "does not match the EdDSA key"},
		{name: "EdDSA kid, signed by another Ed25519 key", token: signRaw(t, jwt.SigningMethodEdDSA, other.signer, header("EdDSA", ed.ID), payload), reason: "signature invalid"},
		{name: "unknown kid", token: signWith(t, other, payload), reason: "unknown key id"},
		{name: "no kid", token: signRaw(t, jwt.SigningMethodEdDSA, ed.signer, header("EdDSA", ""), payload), reason: `no "kid"`},
		{name: "numeric kid", token: signRaw(t, jwt.SigningMethodEdDSA, ed.signer, `{"alg":"EdDSA","kid":7}`, payload), reason: `no "kid"`},
		{name: "crit header", token: signRaw(t, jwt.SigningMethodEdDSA, ed.signer, `{"alg":"EdDSA","kid":"`+ed.ID+`","crit":["b64"],"b64":false}`, payload), reason: `"crit"`},
		{name: "expired", token: signWith(t, ed, claimsJSON(t, expiredAt, nil)), reason: "token expired"},
		{name: "iat in the future beyond the leeway", token: claims(map[string]any{"iat": t0.Add(DefaultLeeway + time.Second).Unix(),
			"exp": t0.Add(time.Hour).Unix()}), reason: "iat in the future"},
		{name: "nbf in the future", token: claims(map[string]any{"nbf": t0.Add(DefaultLeeway + time.Second).Unix()}), reason: "nbf in the future"},
		{name: "wrong issuer", token: claims(map[string]any{"iss": "mallory"}), reason: "wrong issuer"},
		{name: "issuer differs in case", token: claims(map[string]any{"iss": "FenceGW"}), reason: "wrong issuer"},
		{name: "wrong audience", token: claims(map[string]any{"aud": "someone-else"}), reason: "wrong audience"},
		{name: "audience list without ours", token: claims(map[string]any{"aud": []string{"a", "b"}}), reason: "wrong audience"},
		{name: "audience list with ours and another", token: claims(map[string]any{"aud": []string{testAudience, "b"}}), reason: "more than one audience"},
		{name: "audience of wrong type", token: claims(map[string]any{"aud": 5}), malformed: true, reason: "aud"},
		{name: "missing exp", token: claims(map[string]any{"exp": omit{}}), reason: "exp missing"},
		{name: "missing iat", token: claims(map[string]any{"iat": omit{}}), reason: "iat missing"},
		{name: "missing iss", token: claims(map[string]any{"iss": omit{}}), reason: "iss missing"},
		{name: "missing aud", token: claims(map[string]any{"aud": omit{}}), reason: "aud missing"},
		{name: "exp not after iat", token: claims(map[string]any{"exp": t0.Unix()}), reason: "exp not after iat"},
		{name: "missing epoch", token: claims(map[string]any{"epoch": omit{}}), reason: "epoch missing or not positive"},
		{name: "epoch zero", token: claims(map[string]any{"epoch": 0}), reason: "epoch missing or not positive"},
		{name: "epoch negative", token: claims(map[string]any{"epoch": -3}), reason: "epoch missing or not positive"},
		{name: "epoch null", token: claims(map[string]any{"epoch": nil}), reason: "epoch missing or not positive"},
		{name: "epoch fraction", token: claims(map[string]any{"epoch": json.RawMessage("1.5")}), malformed: true, reason: "epoch"},
		{name: "epoch exponent", token: claims(map[string]any{"epoch": json.RawMessage("1e3")}), malformed: true, reason: "epoch"},
		{name: "epoch string", token: claims(map[string]any{"epoch": "5"}), malformed: true, reason: "epoch"},
		{name: "epoch above int64", token: claims(map[string]any{"epoch": json.RawMessage("9223372036854775808")}), malformed: true, reason: "epoch"},
		{name: "missing res", token: claims(map[string]any{"res": omit{}}), reason: "res missing"},
		{name: "empty res", token: claims(map[string]any{"res": ""}), reason: "res missing"},
		{name: "res not a string", token: claims(map[string]any{"res": 5}), malformed: true, reason: "res"},
		{name: "missing sub", token: claims(map[string]any{"sub": omit{}}), reason: "sub missing"},
		// Claim names are exact: a case twin is refused, never read.
		{name: "EPOCH for epoch", token: claims(map[string]any{"epoch": omit{}, "EPOCH": 5}), malformed: true, reason: "differs from epoch only in case"},
		{name: "Epoch beside epoch", token: claims(map[string]any{"epoch": 1, "Epoch": 9}), malformed: true, reason: "differs from epoch only in case"},
		{name: "epoch given twice", token: prepend(`"epoch":9`, nil), malformed: true, reason: "claim epoch appears more than once"},
		{name: "epoch given twice, same value", token: prepend(`"epoch":7`, nil), malformed: true, reason: "claim epoch appears more than once"},
		{name: "res given twice", token: prepend(`"res":"other"`, nil), malformed: true, reason: "claim res appears more than once"},
		{name: "exp given twice", token: prepend(`"exp":`+itoa(t0.Add(time.Hour).Unix()), nil), malformed: true, reason: "claim exp appears more than once"},
		{name: "RES for res", token: claims(map[string]any{"res": omit{}, "RES": "invoice-sweeper"}), malformed: true, reason: "differs from res only in case"},
		{name: "Sub beside sub", token: claims(map[string]any{"Sub": "node-b"}), malformed: true, reason: "differs from sub only in case"},
		{name: "long-s twin of sub", token: claims(map[string]any{"sub": omit{}, "\u017fub": "node-a"}), malformed: true, reason: "differs from sub only in case"},
		{name: "EXP for exp", token: claims(map[string]any{"exp": omit{}, "EXP": t0.Add(time.Minute).Unix()}), malformed: true, reason: "differs from exp only in case"},
		{name: "Iat beside iat", token: claims(map[string]any{"Iat": t0.Unix()}), malformed: true, reason: "differs from iat only in case"},
		{name: "NBF in the future", token: claims(map[string]any{"NBF": t0.Add(time.Hour).Unix()}), malformed: true, reason: "differs from nbf only in case"},
		{name: "ISS beside iss", token: claims(map[string]any{"ISS": "mallory"}), malformed: true, reason: "differs from iss only in case"},
		{name: "AUD for aud", token: claims(map[string]any{"aud": omit{}, "AUD": testAudience}), malformed: true, reason: "differs from aud only in case"},
		{name: "claims a JSON array", token: signWith(t, ed, `[{"epoch":7}]`), malformed: true, reason: "JSON object"},
		{name: "claims a JSON string", token: signWith(t, ed, `"epoch"`), malformed: true, reason: "JSON object"},
		{name: "several failures at once", token: claims(map[string]any{"sub": "", "res": "", "epoch": 0}), reason: "sub missing or empty, res missing or empty, epoch missing or not positive"},
		{name: "empty", token: "", malformed: true, reason: "empty token"},
		{name: "one segment", token: "abcdefgh", malformed: true, reason: "segments"},
		{name: "two segments", token: p[0] + "." + p[1], malformed: true, reason: "segments"},
		{name: "four segments", token: good + ".x", malformed: true, reason: "segments"},
		{name: "bad base64 header", token: "!!!!." + p[1] + "." + p[2], malformed: true, reason: "base64url"},
		{name: "padded segment", token: p[0] + "=." + p[1] + "." + p[2], malformed: true, reason: "base64url"},
		{name: "header not JSON", token: b64([]byte("not json")) + "." + p[1] + "." + p[2], malformed: true, reason: "JSON"},
		{name: "header JSON array", token: b64([]byte(`["alg"]`)) + "." + p[1] + "." + p[2], malformed: true, reason: "JSON"},
		{name: "claims not JSON", token: p[0] + "." + b64([]byte("{")) + "." + p[2], malformed: true, reason: "JSON"},
		{name: "too long", token: p[0] + "." + strings.Repeat("A", MaxTokenLen) + "." + p[2], malformed: true, reason: "longer than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ver := v
			if tc.verifier != nil {
				ver = tc.verifier
			}
			c, err := ver.VerifyClaims(tc.token)
			checkRefusal(t, tc, c, err)
			fc, err := ver.Verify(context.Background(), tc.token)
			if err == nil || fc.Epoch != 0 || fc.Resource != "" || fc.Holder != "" || !fc.Expires.IsZero() {
				t.Errorf("Verify = %+v, %v; want zero claims and an error", fc, err)
			}
		})
	}
}

func checkRefusal(t *testing.T, tc refusal, c Claims, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted: %+v", c)
	}
	if !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("error %q does not wrap ErrUnauthenticated", err)
	}
	if got := errors.Is(err, tokens.ErrMalformedToken); got != tc.malformed {
		t.Errorf("error %q: wraps ErrMalformedToken = %v, want %v", err, got, tc.malformed)
	}
	msg := err.Error()
	if !strings.Contains(msg, tc.reason) {
		t.Errorf("error %q does not name %q", msg, tc.reason)
	}
	for _, seg := range strings.Split(tc.token, ".") {
		if len(seg) >= 8 && strings.Contains(msg, seg) {
			t.Errorf("error %q echoes the token", msg)
		}
	}
	if c != (Claims{}) {
		t.Errorf("claims %+v returned with an error", c)
	}
}

func TestVerifyLeeway(t *testing.T) {
	k := mustKey(t, AlgEdDSA)
	r := mustRing(t, k)
	s := mustSigner(t, r)
	clock := newClock(t0)
	v := mustVerifier(t, r, clock, WithCacheSize(0))
	tok, exp, err := s.Sign("node-a", "r", 1, t0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		now  time.Time
		ok   bool
		name string
	}{
		{t0, true, "at iat"},
		{t0.Add(-DefaultLeeway), true, "iat ahead of the clock by the leeway"},
		{t0.Add(-DefaultLeeway - time.Nanosecond), false, "iat ahead of the clock beyond the leeway"},
		{t0.Add(-time.Minute), false, "iat a minute ahead: the signer's clock runs ahead"},
		{exp.Add(-time.Nanosecond), true, "just before exp"},
		{exp.Add(DefaultLeeway - time.Nanosecond), true, "after exp within the leeway"},
		{exp.Add(DefaultLeeway), false, "exp + leeway"},
	} {
		clock.Set(tc.now)
		_, err := v.VerifyClaims(tok)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok = %v", tc.name, err, tc.ok)
		}
	}

	clock.Set(t0.Add(-DefaultLeeway - time.Second))
	if _, err := v.VerifyClaims(tok); !errors.Is(err, ErrUnauthenticated) || errors.Is(err, tokens.ErrMalformedToken) ||
		!strings.Contains(err.Error(), "iat in the future") {
		t.Errorf("iat beyond the leeway: err = %v, want unauthenticated: iat in the future", err)
	}

	strict := mustVerifier(t, r, clock, WithCacheSize(0), WithLeeway(0))
	clock.Set(exp)
	if _, err := strict.VerifyClaims(tok); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("zero leeway at exp: err = %v, want expired", err)
	}
	clock.Set(t0.Add(-time.Nanosecond))
	if _, err := strict.VerifyClaims(tok); err == nil || !strings.Contains(err.Error(), "iat in the future") {
		t.Errorf("zero leeway before iat: err = %v, want iat in the future", err)
	}
	clock.Set(t0)
	if _, err := strict.VerifyClaims(tok); err != nil {
		t.Errorf("zero leeway at iat: %v", err)
	}

	// A cached verifier refuses a token from the future too, and accepts it
	// once the clock reaches it: a refusal is never cached.
	cached := mustVerifier(t, r, clock)
	clock.Set(t0.Add(-DefaultLeeway - time.Second))
	if _, err := cached.VerifyClaims(tok); err == nil {
		t.Error("cached verifier accepted a token from the future")
	}
	clock.Set(t0)
	if _, err := cached.VerifyClaims(tok); err != nil {
		t.Errorf("cached verifier, at iat: %v", err)
	}
}

// TestVerifyClaimNamesExact: members that merely resemble a claim, or spell
// it with escapes, are not case twins; the token verifies and the claims
// come from the exact names.
func TestVerifyClaimNamesExact(t *testing.T) {
	k := mustKey(t, AlgEdDSA)
	v := mustVerifier(t, mustRing(t, k), newClock(t0), WithCacheSize(0))
	for name, payload := range map[string]string{
		"unknown members":         claimsJSON(t, t0, map[string]any{"epochs": 9, "EPOCHX": 9, "jti": "x", "Jti": "y", "res_": "z"}),
		"escaped exact name":      strings.Replace(claimsJSON(t, t0, nil), `"epoch"`, `"\u0065poch"`, 1),
		"case twin of no claim":   claimsJSON(t, t0, map[string]any{"Foo": 1, "foo": 2}),
		"unknown member repeated": "{" + `"x":1,"x":2,` + claimsJSON(t, t0, nil)[1:],
		"nested case twins":       claimsJSON(t, t0, map[string]any{"ext": map[string]any{"EPOCH": 9, "epoch": 8}}),
	} {
		c, err := v.VerifyClaims(signWith(t, k, payload))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if c.Epoch != 7 || c.Resource != "invoice-sweeper" || c.Holder != "node-a" {
			t.Errorf("%s: claims %+v, want epoch 7 for node-a on invoice-sweeper", name, c)
		}
	}
}

func TestKeyRotation(t *testing.T) {
	old := mustKey(t, AlgEdDSA)
	next := mustKey(t, AlgEdDSA)
	clock := newClock(t0)

	oldTok := mustSign(t, mustSigner(t, mustRing(t, old)), "node-a", "r", 1, t0)

	// Rotated: sign with next, keep old's public half.
	rotated := mustRing(t, next, old.Public())
	v := mustVerifier(t, rotated, clock)
	if c, err := v.VerifyClaims(oldTok); err != nil || c.KeyID != old.ID {
		t.Fatalf("old token after rotation: %+v, %v", c, err)
	}
	newTok := mustSign(t, mustSigner(t, rotated), "node-b", "r", 2, t0)
	if c, err := v.VerifyClaims(newTok); err != nil || c.KeyID != next.ID {
		t.Fatalf("new token after rotation: %+v, %v", c, err)
	}
	if got := rotated.KeyIDs(); len(got) != 2 || got[0] != next.ID || got[1] != old.ID {
		t.Errorf("KeyIDs = %v", got)
	}

	// Old key removed: a new Verifier refuses the old token.
	retired := mustVerifier(t, mustRing(t, next), clock)
	if _, err := retired.VerifyClaims(oldTok); !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), "unknown key id") {
		t.Errorf("old token after removal: %v", err)
	}
	if _, err := retired.VerifyClaims(newTok); err != nil {
		t.Errorf("new token after removal: %v", err)
	}

	// A verification-only keyring (a replica that never signs).
	vo := mustVerifier(t, mustRing(t, nil, next.Public(), old.Public()), clock)
	for _, tok := range []string{oldTok, newTok} {
		if _, err := vo.VerifyClaims(tok); err != nil {
			t.Errorf("verification-only keyring: %v", err)
		}
	}
}

func TestSignValidates(t *testing.T) {
	s := mustSigner(t, mustRing(t, mustKey(t, AlgEdDSA)))
	for _, tc := range []struct {
		name, holder, resource string
		epoch                  int64
		now                    time.Time
	}{
		{"empty holder", "", "r", 1, t0},
		{"long holder", strings.Repeat("h", MaxHolderLen+1), "r", 1, t0},
		{"holder not UTF-8", "\xff", "r", 1, t0},
		{"empty resource", "h", "", 1, t0},
		{"resource with newline", "h", "a\nb", 1, t0},
		{"epoch zero", "h", "r", 0, t0},
		{"epoch negative", "h", "r", -1, t0},
		{"zero time", "h", "r", 1, time.Time{}},
	} {
		if tok, _, err := s.Sign(tc.holder, tc.resource, tc.epoch, tc.now); err == nil {
			t.Errorf("%s: signed %q", tc.name, tok)
		}
	}
	if _, _, err := s.Sign("h", "r", 0, t0); !errors.Is(err, tokens.ErrInvalidEpoch) {
		t.Errorf("epoch 0: %v, want ErrInvalidEpoch", err)
	}
	if _, _, err := s.Sign("h", "", 1, t0); !errors.Is(err, tokens.ErrInvalidResource) {
		t.Errorf("empty resource: %v, want ErrInvalidResource", err)
	}
}

func TestConstructorsValidate(t *testing.T) {
	k := mustKey(t, AlgEdDSA)
	r := mustRing(t, k)
	verifyOnly := mustRing(t, nil, k.Public())
	for name, err := range map[string]error{
		"signer nil keyring":         second(NewSigner(nil, "i", "a", time.Minute)),
		"signer verify-only keyring": second(NewSigner(verifyOnly, "i", "a", time.Minute)),
		"signer empty issuer":        second(NewSigner(r, "", "a", time.Minute)),
		"signer empty audience":      second(NewSigner(r, "i", "", time.Minute)),
		"signer short lifetime":      second(NewSigner(r, "i", "a", time.Millisecond)),
		"verifier nil keyring":       second(NewVerifier(nil, "i", "a")),
		"verifier empty issuer":      second(NewVerifier(r, "", "a")),
		"verifier empty audience":    second(NewVerifier(r, "i", "")),
		"verifier nil clock":         second(NewVerifier(r, "i", "a", WithClock(nil))),
		"verifier negative leeway":   second(NewVerifier(r, "i", "a", WithLeeway(-time.Second))),
		"verifier huge leeway":       second(NewVerifier(r, "i", "a", WithLeeway(time.Hour))),
		"verifier negative cache":    second(NewVerifier(r, "i", "a", WithCacheSize(-1))),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestVerifyConcurrent(t *testing.T) {
	k := mustKey(t, AlgEdDSA)
	r := mustRing(t, k)
	s := mustSigner(t, r)
	v := mustVerifier(t, r, newClock(t0), WithCacheSize(16))
	toks := make([]string, 50)
	for i := range toks {
		toks[i] = mustSign(t, s, "node-a", "r", int64(i+1), t0)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				j := (i*7 + g) % len(toks)
				c, err := v.VerifyClaims(toks[j])
				if err != nil || c.Epoch != int64(j+1) {
					t.Errorf("token %d: %+v, %v", j, c, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := v.cache.len(); n > 16 {
		t.Errorf("cache holds %d entries, bound 16", n)
	}
}
