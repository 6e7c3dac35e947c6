package signed

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestVerifyBoundsLifetimeAndDates: with a maximum lifetime, a token whose
// exp − iat exceeds it plus the leeway is refused, however well signed (a
// leaked long-lived token bounds nothing); iat, exp and nbf must be JSON
// numbers, never strings that hold one.
func TestVerifyBoundsLifetimeAndDates(t *testing.T) {
	k := mustKey(t, AlgEdDSA)
	r := mustRing(t, k)
	v := mustVerifier(t, r, newClock(t0), WithCacheSize(0), WithMaxLifetime(testLifetime))
	unbounded := mustVerifier(t, r, newClock(t0), WithCacheSize(0))
	century := claimsJSON(t, t0, map[string]any{"exp": t0.AddDate(100, 0, 0).Unix()})
	for _, tc := range []refusal{
		{name: "exp 100 years ahead", token: signWith(t, k, century), reason: "exp − iat exceeds the token lifetime"},
		{name: "lifetime plus leeway plus 1s", token: signWith(t, k, claimsJSON(t, t0, map[string]any{
			"exp": t0.Add(testLifetime + DefaultLeeway + time.Second).Unix()})), reason: "exp − iat exceeds the token lifetime"},
		{name: "string exp", verifier: unbounded, malformed: true, reason: "claim exp is not a JSON number",
			token: signWith(t, k, claimsJSON(t, t0, map[string]any{"exp": strconv.FormatInt(t0.Add(time.Minute).Unix(), 10)}))},
		{name: "string iat", verifier: unbounded, malformed: true, reason: "claim iat is not a JSON number",
			token: signWith(t, k, claimsJSON(t, t0, map[string]any{"iat": strconv.FormatInt(t0.Unix(), 10)}))},
		{name: "string nbf", verifier: unbounded, malformed: true, reason: "claim nbf is not a JSON number",
			token: signWith(t, k, claimsJSON(t, t0, map[string]any{"nbf": strconv.FormatInt(t0.Unix(), 10)}))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ver := v
			if tc.verifier != nil {
				ver = tc.verifier
			}
			c, err := ver.VerifyClaims(tc.token)
			checkRefusal(t, tc, c, err)
		})
	}
	// At the bound, plus the leeway, a token is accepted; without a bound
	// the century-long one is (the CLI's inspect, say).
	for name, token := range map[string]string{
		"lifetime":        signWith(t, k, claimsJSON(t, t0, nil)),
		"lifetime+leeway": signWith(t, k, claimsJSON(t, t0, map[string]any{"exp": t0.Add(testLifetime + DefaultLeeway).Unix()})),
	} {
		if _, err := v.VerifyClaims(token); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := unbounded.VerifyClaims(signWith(t, k, century)); err != nil {
		t.Errorf("without a bound, the century-long token: %v", err)
	}
	if _, err := NewVerifier(r, testIssuer, testAudience, WithMaxLifetime(-time.Second)); err == nil {
		t.Error("a negative maximum lifetime was accepted")
	}
}

// TestAuthorityBoundsLifetime: the authority's verifier refuses a token its
// own key signed with a longer life than token_lifetime.
func TestAuthorityBoundsLifetime(t *testing.T) {
	a, err := NewAuthority(context.Background(), AuthorityOptions{Algorithm: AlgEdDSA, Issuer: testIssuer, Audience: testAudience,
		Lifetime: 10 * time.Minute, KeepBeside: filepath.Join(t.TempDir(), "key.pem")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := a.Verifier.VerifyClaims(signWith(t, a.Keys.signing, claimsJSON(t, now, map[string]any{"exp": now.Add(10 * time.Minute).Unix()}))); err != nil {
		t.Fatalf("a token of token_lifetime: %v", err)
	}
	long := signWith(t, a.Keys.signing, claimsJSON(t, now, map[string]any{"exp": now.AddDate(100, 0, 0).Unix()}))
	if _, err := a.Verifier.VerifyClaims(long); err == nil || !strings.Contains(err.Error(), "exceeds the token lifetime") {
		t.Fatalf("a token living 100 years: %v, want refused", err)
	}
}
