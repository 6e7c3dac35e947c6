package signed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
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
// fractions, exponents, strings and values beyond int64. Its UnmarshalJSON
// reads the claims of claimNames by their exact names only (see
// checkClaimNames); other members are ignored.
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

// claimNames are the names of the claims a Verifier reads: exactly the
// JSON names of wireClaims' fields.
var claimNames = [...]string{"iss", "sub", "aud", "res", "epoch", "iat", "exp", "nbf"}

// UnmarshalJSON decodes a token's payload. It first refuses, with a
// *claimError, a payload that is not a JSON object, or in which a member
// name differs from one of claimNames only in case, or one of claimNames
// appears more than once: encoding/json alone would read "EPOCH" as epoch
// and keep the last of two "epoch" members, so a token could mean one thing
// here and another to a verifier that reads names exactly or keeps the
// first. Then it decodes the fields as encoding/json does.
func (c *wireClaims) UnmarshalJSON(b []byte) error {
	if err := checkClaimNames(b); err != nil {
		return err
	}
	if err := checkDatesAreNumbers(b); err != nil {
		return err
	}
	type plain wireClaims // without this method
	return json.Unmarshal(b, (*plain)(c))
}

// checkClaimNames checks the member names of the JSON object b, which
// json.Unmarshal has already found valid. Names are compared as
// encoding/json matches them to fields: by strings.EqualFold (Unicode
// simple folding, so "\u017fub" with a long s is a twin of "sub" too).
func checkClaimNames(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return &claimError{"claims are not a JSON object"}
	}
	var seen [len(claimNames)]bool
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fmt.Errorf("read a claim name: %w", err)
		}
		name, _ := t.(string)
		for i, known := range claimNames {
			switch {
			case !strings.EqualFold(name, known):
				continue
			case name != known:
				return &claimError{fmt.Sprintf("a claim name differs from %s only in case", known)}
			case seen[i]:
				return &claimError{fmt.Sprintf("claim %s appears more than once", known)}
			}
			seen[i] = true
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return fmt.Errorf("read claim value: %w", err)
		}
	}
	return nil
}

// claimError is a payload whose claim names a Verifier refuses to read.
// Its reason names the check, never token text other than a claim name of
// claimNames.
type claimError struct{ reason string }

// checkDatesAreNumbers refuses, with a *claimError, an iat, exp or nbf that
// is not a JSON number: jwt.NumericDate would read "1796410779", a string,
// as that date. b is a JSON object whose claim names checkClaimNames found
// exact and single.
func checkDatesAreNumbers(b []byte) error {
	var dates struct {
		IssuedAt  json.RawMessage `json:"iat"`
		ExpiresAt json.RawMessage `json:"exp"`
		NotBefore json.RawMessage `json:"nbf"`
	}
	if err := json.Unmarshal(b, &dates); err != nil {
		return &claimError{reason: "claims are not a JSON object"}
	}
	for _, d := range []struct {
		name string
		raw  json.RawMessage
	}{{"iat", dates.IssuedAt}, {"exp", dates.ExpiresAt}, {"nbf", dates.NotBefore}} {
		if len(d.raw) > 0 && d.raw[0] != '-' && (d.raw[0] < '0' || d.raw[0] > '9') {
			return &claimError{reason: "claim " + d.name + " is not a JSON number"}
		}
	}
	return nil
}

func (e *claimError) Error() string { return e.reason }

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
