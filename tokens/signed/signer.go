package signed

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/fencegw/fencegw/tokens"
	"github.com/golang-jwt/jwt/v5"
)

// MaxHolderLen is the longest holder name, in bytes, that a Signer signs.
const MaxHolderLen = 256

// Signer issues tokens with the signing key of a Keyring. It is immutable
// and safe for concurrent use.
type Signer struct {
	key      *Key
	method   jwt.SigningMethod
	issuer   string
	audience string
	lifetime time.Duration
}

// NewSigner returns a Signer that signs with r's signing key and writes iss
// = issuer and aud = audience into every token; each token expires lifetime
// after it is issued. issuer and audience must not be empty, lifetime must
// be at least one second (token times have whole-second precision), and r
// must have a signing key.
func NewSigner(r *Keyring, issuer, audience string, lifetime time.Duration) (*Signer, error) {
	switch {
	case r == nil:
		return nil, errors.New("signer: nil keyring")
	case r.signing == nil:
		return nil, errors.New("signer: keyring has no signing key")
	case issuer == "":
		return nil, errors.New("signer: empty issuer")
	case audience == "":
		return nil, errors.New("signer: empty audience")
	case lifetime < time.Second:
		return nil, fmt.Errorf("signer: lifetime %v shorter than 1s", lifetime)
	}
	return &Signer{key: r.signing, method: r.signing.method(), issuer: issuer, audience: audience, lifetime: lifetime}, nil
}

// KeyID returns the id of the key the Signer signs with.
func (s *Signer) KeyID() string { return s.key.ID }

// Sign returns a token saying that holder holds resource at epoch, issued at
// now (truncated to the second) and expiring at exp = iat + lifetime
// (truncated to the second), and returns exp as written in the token.
// holder must be 1 to MaxHolderLen bytes of valid UTF-8, resource must pass
// tokens.ValidateResource and epoch tokens.ValidateEpoch; now must not be
// the zero time. Pass the time of the lease grant or renewal as now.
func (s *Signer) Sign(holder, resource string, epoch int64, now time.Time) (token string, exp time.Time, err error) {
	switch {
	case holder == "":
		return "", time.Time{}, errors.New("sign: empty holder")
	case len(holder) > MaxHolderLen:
		return "", time.Time{}, fmt.Errorf("sign: holder longer than %d bytes", MaxHolderLen)
	case !utf8.ValidString(holder):
		return "", time.Time{}, errors.New("sign: holder is not valid UTF-8")
	case now.IsZero():
		return "", time.Time{}, errors.New("sign: zero time")
	}
	if err := tokens.ValidateResource(resource); err != nil {
		return "", time.Time{}, fmt.Errorf("sign: %w", err)
	}
	if err := tokens.ValidateEpoch(epoch); err != nil {
		return "", time.Time{}, fmt.Errorf("sign: %w", err)
	}
	iat := time.Unix(now.Unix(), 0)
	exp = time.Unix(iat.Add(s.lifetime).Unix(), 0)
	claims := &wireClaims{
		Issuer:    s.issuer,
		Subject:   holder,
		Audience:  audience{s.audience},
		Resource:  resource,
		Epoch:     epoch,
		IssuedAt:  &jwt.NumericDate{Time: iat},
		ExpiresAt: &jwt.NumericDate{Time: exp},
	}
	t := jwt.NewWithClaims(s.method, claims)
	t.Header["kid"] = s.key.ID
	token, err = t.SignedString(s.key.signingMaterial())
	if err != nil {
		return "", time.Time{}, fmt.Errorf("sign with %s: %w", s.key, err)
	}
	return token, exp, nil
}
