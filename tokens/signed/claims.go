package signed

import (
	"encoding/json"
	"time"

	"github.com/fencegw/fencegw/tokens"
	"github.com/golang-jwt/jwt/v5"
)

// Claims is what a verified token says, beyond tokens.Claims.
type Claims struct {
	// Holder is the lease holder ("sub").
	Holder string
	// Resource is the fenced resource ("res").
	Resource string
	// Epoch is the fencing epoch ("epoch"), always positive.
	Epoch int64
	// IssuedAt is when the token was signed ("iat"), whole seconds.
	IssuedAt time.Time
	// Expires is when the token stops being accepted ("exp"), whole seconds;
	// a Verifier still accepts it for its leeway after that.
	Expires time.Time
	// KeyID is the id of the key that verified the token ("kid").
	KeyID string
}

// Fencing returns the tokens.Claims part of c (Epoch, Resource, Holder,
// Expires).
func (c Claims) Fencing() tokens.Claims {
	return tokens.Claims{Epoch: c.Epoch, Resource: c.Resource, Holder: c.Holder, Expires: c.Expires}
}

// wireClaims is the JSON payload of a token. Epoch is an int64, so
// encoding/json parses it exactly (no float64 round trip) and refuses
// fractions, exponents, strings and values beyond int64.
type wireClaims struct {
	Issuer    string           `json:"iss,omitempty"`
	Subject   string           `json:"sub,omitempty"`
	Audience  audience         `json:"aud,omitempty"`
	Resource  string           `json:"res,omitempty"`
	Epoch     int64            `json:"epoch"`
	IssuedAt  *jwt.NumericDate `json:"iat,omitempty"`
	ExpiresAt *jwt.NumericDate `json:"exp,omitempty"`
	NotBefore *jwt.NumericDate `json:"nbf,omitempty"` // never signed; checked when present
}

var _ jwt.Claims = (*wireClaims)(nil)

func (c *wireClaims) GetExpirationTime() (*jwt.NumericDate, error) { return c.ExpiresAt, nil }
func (c *wireClaims) GetIssuedAt() (*jwt.NumericDate, error)       { return c.IssuedAt, nil }
func (c *wireClaims) GetNotBefore() (*jwt.NumericDate, error)      { return c.NotBefore, nil }
func (c *wireClaims) GetIssuer() (string, error)                   { return c.Issuer, nil }
func (c *wireClaims) GetSubject() (string, error)                  { return c.Subject, nil }
func (c *wireClaims) GetAudience() (jwt.ClaimStrings, error) {
	return jwt.ClaimStrings(c.Audience), nil
}

// audience is the "aud" claim: decoded from a string or an array of
// strings, encoded as a single string when it has one member (without
// touching jwt.MarshalSingleStringAsArray, a package-global).
type audience []string

func (a audience) MarshalJSON() ([]byte, error) {
	if len(a) == 1 {
		return json.Marshal(a[0])
	}
	return json.Marshal([]string(a))
}

func (a *audience) UnmarshalJSON(b []byte) error {
	var s jwt.ClaimStrings
	if err := s.UnmarshalJSON(b); err != nil {
		return err
	}
	*a = audience(s)
	return nil
}
