package tokens

import (
	"context"
	"errors"
	"time"
)

// ErrUnauthenticated means a signed token failed verification: a bad
// signature, an unknown key, a refused algorithm, an expired token, or the
// wrong issuer or audience.
var ErrUnauthenticated = errors.New("fencing token not authentic")

// ErrWrongResource means a valid token was issued for another resource than
// the one the request writes to.
var ErrWrongResource = errors.New("token issued for another resource")

// Claims is what a verified fencing token says.
type Claims struct {
	// Epoch is the fencing epoch the write carries.
	Epoch int64
	// Resource is the resource the token was issued for; empty when the
	// token does not name one (a raw epoch).
	Resource string
	// Holder is the lease holder the token was issued to; empty when unknown.
	Holder string
	// Expires is when a signed token lapses; zero for a raw epoch.
	Expires time.Time
}

// EpochSource is an external election that is the truth about who leads a
// resource, consulted on raw routes that name one.
type EpochSource interface {
	// Check returns nil when epoch is the source's current, live epoch for
	// resource; a *StaleEpochError when epoch is below it, or the leader's
	// lease lapsed, or there is no leader (Reason says which of the last
	// two); an *EpochNotIssuedError when epoch is above it; an error
	// wrapping *UnavailableError when the source cannot answer (the caller
	// fails closed). Package source implements it for external elections.
	Check(ctx context.Context, resource string, epoch int64) error
}

// Verifier turns the value of a Fencing-Token header into Claims. It returns
// an error wrapping ErrMalformedToken for a token it cannot parse.
type Verifier interface {
	Verify(ctx context.Context, token string) (Claims, error)
}

// RawVerifier accepts a raw decimal epoch, 0 included (see ParseRawEpoch;
// Decide admits 0 only on a route with an epoch source). A raw epoch names
// neither resource nor holder: the route or the request must name the
// resource.
type RawVerifier struct{}

// Verify parses token as a raw decimal epoch.
func (RawVerifier) Verify(_ context.Context, token string) (Claims, error) {
	e, err := ParseRawEpoch(token)
	if err != nil {
		return Claims{}, err
	}
	return Claims{Epoch: e}, nil
}

// AnyVerifier accepts a raw decimal epoch or a signed token: a token made
// only of digits is raw, anything else is handed to Signed.
type AnyVerifier struct {
	Signed Verifier
}

// Verify dispatches on the token's form.
func (v AnyVerifier) Verify(ctx context.Context, token string) (Claims, error) {
	if isDigits(token) {
		return RawVerifier{}.Verify(ctx, token)
	}
	return v.Signed.Verify(ctx, token)
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
