package signed

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testIssuer   = "fencegw"
	testAudience = "fencegw-upstream"
	testLifetime = time.Minute
)

// t0 is the test clock's start: a whole second.
var t0 = time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)

// fakeClock is an injectable, concurrency-safe clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock(t time.Time) *fakeClock { return &fakeClock{now: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func mustKey(tb testing.TB, alg string) *Key {
	tb.Helper()
	k, err := GenerateKey(alg)
	if err != nil {
		tb.Fatalf("GenerateKey(%q): %v", alg, err)
	}
	return k
}

func mustRing(tb testing.TB, signing *Key, verify ...*Key) *Keyring {
	tb.Helper()
	r, err := NewKeyring(signing, verify...)
	if err != nil {
		tb.Fatalf("NewKeyring: %v", err)
	}
	return r
}

func mustSigner(tb testing.TB, r *Keyring) *Signer {
	tb.Helper()
	s, err := NewSigner(r, testIssuer, testAudience, testLifetime)
	if err != nil {
		tb.Fatalf("NewSigner: %v", err)
	}
	return s
}

func mustVerifier(tb testing.TB, r *Keyring, clock *fakeClock, opts ...VerifierOption) *Verifier {
	tb.Helper()
	if clock != nil {
		opts = append([]VerifierOption{WithClock(clock.Now)}, opts...)
	}
	v, err := NewVerifier(r, testIssuer, testAudience, opts...)
	if err != nil {
		tb.Fatalf("NewVerifier: %v", err)
	}
	return v
}

func mustSign(tb testing.TB, s *Signer, holder, resource string, epoch int64, now time.Time) string {
	tb.Helper()
	tok, _, err := s.Sign(holder, resource, epoch, now)
	if err != nil {
		tb.Fatalf("Sign: %v", err)
	}
	return tok
}

var b64 = base64.RawURLEncoding.EncodeToString

// omit, as a claimsJSON override, removes the claim.
type omit struct{}

// claimsJSON returns a valid payload issued at now, with overrides applied
// (a json.RawMessage value is written verbatim; omit{} removes the claim).
func claimsJSON(tb testing.TB, now time.Time, overrides map[string]any) string {
	tb.Helper()
	m := map[string]any{
		"iss":   testIssuer,
		"aud":   testAudience,
		"sub":   "node-a",
		"res":   "invoice-sweeper",
		"epoch": int64(7),
		"iat":   now.Unix(),
		"exp":   now.Add(testLifetime).Unix(),
	}
	for k, v := range overrides {
		if _, ok := v.(omit); ok {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// header returns a JOSE header JSON for alg and kid ("" omits the kid).
func header(alg, kid string) string {
	m := map[string]string{"alg": alg, "typ": "JWT"}
	if kid != "" {
		m["kid"] = kid
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// signRaw builds a compact JWS over the given header and payload JSON,
// signed with method and material (whatever the header says).
func signRaw(tb testing.TB, method jwt.SigningMethod, material any, headerJSON, payloadJSON string) string {
	tb.Helper()
	input := b64([]byte(headerJSON)) + "." + b64([]byte(payloadJSON))
	sig, err := method.Sign(input, material)
	if err != nil {
		tb.Fatalf("sign raw: %v", err)
	}
	return input + "." + b64(sig)
}

// signWith signs payloadJSON with k under an honest header.
func signWith(tb testing.TB, k *Key, payloadJSON string) string {
	tb.Helper()
	return signRaw(tb, k.method(), k.signingMaterial(), header(k.Alg, k.ID), payloadJSON)
}

// segments splits a compact JWS.
func segments(tb testing.TB, tok string) []string {
	tb.Helper()
	p := strings.Split(tok, ".")
	if len(p) != 3 {
		tb.Fatalf("token has %d segments", len(p))
	}
	return p
}

func decodeSegment(tb testing.TB, seg string) []byte {
	tb.Helper()
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		tb.Fatalf("decode segment: %v", err)
	}
	return b
}
