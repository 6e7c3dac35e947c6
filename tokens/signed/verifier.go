package signed

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencegw/fencegw/tokens"
	"github.com/golang-jwt/jwt/v5"
)

const (
	// DefaultLeeway is the clock skew a Verifier tolerates on exp and iat.
	DefaultLeeway = 5 * time.Second
	// DefaultCacheSize is how many verified tokens a Verifier caches.
	DefaultCacheSize = 10000
	// MaxTokenLen is the longest token, in bytes, a Verifier parses.
	MaxTokenLen = 8 << 10
)

// VerifierOption configures a Verifier.
type VerifierOption func(*verifierConfig)

type verifierConfig struct {
	clock       func() time.Time
	leeway      time.Duration
	cacheSize   int
	maxLifetime time.Duration
}

// WithClock makes the Verifier read the time from now instead of time.Now
// (for tests). now must be safe for concurrent use.
func WithClock(now func() time.Time) VerifierOption {
	return func(c *verifierConfig) { c.clock = now }
}

// WithLeeway sets the clock skew tolerated on exp and iat (DefaultLeeway
// unless set); it must lie between 0 and one minute.
func WithLeeway(d time.Duration) VerifierOption {
	return func(c *verifierConfig) { c.leeway = d }
}

// WithMaxLifetime refuses tokens whose exp − iat exceeds d plus the
// leeway: a signer of this keyring never issues them (it signs exp = iat +
// token_lifetime), so one is forged with a leaked key or signed under
// another configuration. 0 (the default) bounds nothing; d must not be
// negative.
func WithMaxLifetime(d time.Duration) VerifierOption {
	return func(c *verifierConfig) { c.maxLifetime = d }
}

// WithCacheSize sets how many verified tokens the Verifier caches
// (DefaultCacheSize unless set); 0 disables the cache.
func WithCacheSize(n int) VerifierOption {
	return func(c *verifierConfig) { c.cacheSize = n }
}

// Verifier checks tokens against a Keyring. It implements tokens.Verifier
// and is safe for concurrent use.
//
// A token is accepted only when all of these hold:
//   - it is a compact JWS of at most MaxTokenLen bytes in strict base64url
//     without padding, with no "crit" header;
//   - its "kid" names a key of the keyring and its "alg" equals that key's
//     algorithm (so "none", an algorithm switch and an HS256 token made with
//     a public key are refused), and the signature verifies with that key;
//   - its claims are a JSON object in which each claim the Verifier reads
//     (iss, sub, aud, res, epoch, iat, exp, nbf) appears at most once and
//     under its exact name: a member whose name differs from one of them
//     only in case ("EPOCH", "Epoch", or a Unicode case twin such as
//     "\u017fub" for sub) is refused, never read as that claim; other
//     members are ignored;
//   - exp and iat are present as JSON numbers (iat, exp and nbf are never
//     read from strings), exp is after iat, exp − iat is at most the maximum
//     lifetime plus leeway (WithMaxLifetime), now < exp + leeway and
//     iat <= now + leeway (a token issued in the future beyond the leeway is
//     refused); nbf, if present, is <= now + leeway;
//   - iss equals the issuer, and aud is exactly the audience (a string or a
//     one-element array);
//   - epoch is a positive JSON integer that fits int64, and res and sub are
//     non-empty strings.
//
// Every refusal wraps ErrUnauthenticated and names the failed check; a token
// that cannot be parsed also wraps tokens.ErrMalformedToken. Claims that do
// not decode — of the wrong type, a case twin or a repeat of a claim read —
// are such a parse failure, found before the signature is checked and
// refused whoever signed them. Errors never echo the token. The resource a
// token names is not checked against the route: that is the caller's job.
//
// Clocks: exp, iat and nbf are compared with the Verifier's clock, with the
// leeway on each side. A token whose iat lies beyond the leeway in the
// future comes from a signer whose clock runs ahead, or one that lies about
// when it signed; it is refused, as an expired one is. This decides only
// whether a token is accepted, never who leads or which epoch is current
// (the store decides that, on its own clock), and it fails closed: a
// replica whose clock lags the signing replica's by more than the leeway
// refuses that replica's fresh tokens (401) for the difference and admits
// nothing it would not have admitted otherwise. Keep the clocks of replicas
// that sign and verify one another's tokens within the leeway (NTP).
//
// Verified tokens are cached (only successes) until exp + leeway, keyed by
// the exact token string; a cached token past that deadline is verified
// again and refused as expired. A Verifier sees one Keyring for life: to
// rotate keys, build a new Verifier.
type Verifier struct {
	ring     *Keyring
	issuer   string
	audience string
	leeway   time.Duration
	maxLife  time.Duration
	clock    func() time.Time
	parser   *jwt.Parser
	cache    *cache
}

var _ tokens.Verifier = (*Verifier)(nil)

// NewVerifier returns a Verifier of the tokens signed by the keys of r for
// issuer and audience, both non-empty.
func NewVerifier(r *Keyring, issuer, audience string, opts ...VerifierOption) (*Verifier, error) {
	cfg := verifierConfig{clock: time.Now, leeway: DefaultLeeway, cacheSize: DefaultCacheSize}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case r == nil:
		return nil, errors.New("verifier: nil keyring")
	case issuer == "":
		return nil, errors.New("verifier: empty issuer")
	case audience == "":
		return nil, errors.New("verifier: empty audience")
	case cfg.clock == nil:
		return nil, errors.New("verifier: nil clock")
	case cfg.leeway < 0 || cfg.leeway > time.Minute:
		return nil, fmt.Errorf("verifier: leeway %v outside [0, 1m]", cfg.leeway)
	case cfg.cacheSize < 0:
		return nil, fmt.Errorf("verifier: negative cache size %d", cfg.cacheSize)
	case cfg.maxLifetime < 0:
		return nil, fmt.Errorf("verifier: negative maximum lifetime %v", cfg.maxLifetime)
	}
	v := &Verifier{
		ring:     r,
		issuer:   issuer,
		audience: audience,
		leeway:   cfg.leeway,
		maxLife:  cfg.maxLifetime,
		clock:    cfg.clock,
		cache:    newCache(cfg.cacheSize),
	}
	v.parser = jwt.NewParser(
		jwt.WithValidMethods(slices.Clone(r.algs)),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(), // iat <= now + leeway: see "Clocks" on Verifier
		jwt.WithIssuer(issuer),
		jwt.WithAudience(audience),
		jwt.WithLeeway(cfg.leeway),
		jwt.WithTimeFunc(cfg.clock),
		jwt.WithStrictDecoding(),
	)
	return v, nil
}

// Verify implements tokens.Verifier: it returns the fencing claims (epoch,
// resource, holder, expiry) of a valid token, checked as VerifyClaims
// checks it. ctx is not used: verification is bounded CPU work.
func (v *Verifier) Verify(_ context.Context, token string) (tokens.Claims, error) {
	c, err := v.VerifyClaims(token)
	if err != nil {
		return tokens.Claims{}, err
	}
	return c.Fencing(), nil
}

// VerifyClaims checks token as described on Verifier and returns all of its
// claims. A cached token is answered without checking its signature again.
func (v *Verifier) VerifyClaims(token string) (Claims, error) {
	if token == "" {
		return Claims{}, malformed("empty token")
	}
	if len(token) > MaxTokenLen {
		return Claims{}, malformed(fmt.Sprintf("token longer than %d bytes", MaxTokenLen))
	}
	now := v.clock()
	if c, ok := v.cache.get(token, now); ok {
		return c, nil
	}
	c, err := v.verify(token)
	if err != nil {
		return Claims{}, err
	}
	v.cache.put(token, c, c.Expires.Add(v.leeway), now)
	return c, nil
}

// verify checks token without the cache.
func (v *Verifier) verify(token string) (Claims, error) {
	var (
		keyErr error
		used   *Key
		wc     wireClaims
	)
	keyfunc := func(t *jwt.Token) (any, error) {
		if _, ok := t.Header["crit"]; ok {
			keyErr = unauthenticated(`"crit" header not supported`)
			return nil, keyErr
		}
		kid, ok := t.Header["kid"].(string)
		if !ok || kid == "" {
			keyErr = unauthenticated(`no "kid" header`)
			return nil, keyErr
		}
		k, ok := v.ring.lookup(kid)
		if !ok {
			keyErr = unauthenticated("unknown key id (never known or rotated out)")
			return nil, keyErr
		}
		if t.Method == nil || t.Method.Alg() != k.Alg {
			keyErr = unauthenticated(fmt.Sprintf(`"alg" header does not match the %s key's algorithm`, k.Alg))
			return nil, keyErr
		}
		used = k
		return k.verificationMaterial(), nil
	}
	t, err := v.parser.ParseWithClaims(token, &wc, keyfunc)
	if err != nil {
		if keyErr != nil {
			return Claims{}, keyErr
		}
		return Claims{}, v.classify(err, token, t, &wc)
	}
	if used == nil || t == nil || !t.Valid {
		return Claims{}, unauthenticated("verification failed") // unreachable with jwt/v5
	}
	var bad []string
	if wc.IssuedAt == nil {
		bad = append(bad, "iat missing")
	} else if !wc.ExpiresAt.After(wc.IssuedAt.Time) {
		bad = append(bad, "exp not after iat")
	} else if v.maxLife > 0 && wc.ExpiresAt.Sub(wc.IssuedAt.Time) > v.maxLife+v.leeway {
		bad = append(bad, fmt.Sprintf("exp − iat exceeds the token lifetime (%v plus %v leeway)", v.maxLife, v.leeway))
	}
	if len(wc.Audience) != 1 {
		bad = append(bad, "aud names more than one audience")
	}
	if wc.Subject == "" {
		bad = append(bad, "sub missing or empty")
	}
	if wc.Resource == "" {
		bad = append(bad, "res missing or empty")
	}
	if wc.Epoch <= 0 {
		bad = append(bad, "epoch missing or not positive")
	}
	if len(bad) > 0 {
		return Claims{}, unauthenticated(strings.Join(bad, ", "))
	}
	return Claims{
		Holder:   wc.Subject,
		Resource: wc.Resource,
		Epoch:    wc.Epoch,
		IssuedAt: wc.IssuedAt.Time,
		Expires:  wc.ExpiresAt.Time,
		KeyID:    used.ID,
	}, nil
}

// classify turns a jwt error into an error wrapping ErrUnauthenticated
// whose message names the failed check without quoting the token.
func (v *Verifier) classify(err error, token string, t *jwt.Token, wc *wireClaims) error {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		if strings.Count(token, ".") != 2 {
			return malformed("not three dot-separated segments")
		}
		return malformed(malformedReason(err))
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return unauthenticated(`"alg" header missing or names an unsupported algorithm`)
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		if t != nil && t.Method != nil && !slices.Contains(v.ring.algs, t.Method.Alg()) {
			// Alg() is the name of a registered jwt method, not token text.
			return unauthenticated(fmt.Sprintf("algorithm %s not accepted", t.Method.Alg()))
		}
		return unauthenticated("signature invalid")
	case errors.Is(err, jwt.ErrTokenInvalidClaims):
		var bad []string
		if errors.Is(err, jwt.ErrTokenRequiredClaimMissing) {
			if wc.ExpiresAt == nil {
				bad = append(bad, "exp missing")
			}
			if wc.Issuer == "" {
				bad = append(bad, "iss missing")
			}
			if len(wc.Audience) == 0 || wc.Audience[0] == "" {
				bad = append(bad, "aud missing")
			}
		}
		for _, c := range []struct {
			err    error
			reason string
		}{
			{jwt.ErrTokenExpired, "token expired"},
			{jwt.ErrTokenUsedBeforeIssued, "iat in the future"},
			{jwt.ErrTokenNotValidYet, "nbf in the future"},
			{jwt.ErrTokenInvalidIssuer, "wrong issuer"},
			{jwt.ErrTokenInvalidAudience, "wrong audience"},
		} {
			if errors.Is(err, c.err) {
				bad = append(bad, c.reason)
			}
		}
		if len(bad) == 0 {
			bad = append(bad, "invalid claims")
		}
		return unauthenticated(strings.Join(bad, ", "))
	}
	return unauthenticated("verification failed")
}

// malformedReason names what made a token unparseable, without quoting it.
func malformedReason(err error) string {
	var (
		b64Err  base64.CorruptInputError
		synErr  *json.SyntaxError
		typeErr *json.UnmarshalTypeError
		nameErr *claimError
	)
	switch {
	case errors.As(err, &nameErr):
		return nameErr.reason
	case errors.As(err, &b64Err):
		return "a segment is not strict base64url without padding"
	case errors.As(err, &synErr):
		return "header or claims are not a JSON object"
	case errors.As(err, &typeErr):
		if typeErr.Field != "" {
			// Field is a path of this package's JSON names, not token text.
			return fmt.Sprintf("claim %s has the wrong type or is out of range", typeErr.Field)
		}
		return "header or claims are not a JSON object"
	case errors.Is(err, jwt.ErrInvalidType):
		return "claim aud has the wrong type"
	}
	return "header or claims cannot be decoded"
}
