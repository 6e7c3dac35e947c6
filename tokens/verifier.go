package tokens

import "context"

// Claims is what a verified fencing token says.
type Claims struct {
	// Epoch is the fencing epoch the write carries.
	Epoch int64
	// Resource is the resource the token was issued for; empty when the
	// token does not name one (a raw epoch).
	Resource string
	// Holder is the lease holder the token was issued to; empty when unknown.
	Holder string
}

// Verifier turns the value of a Fencing-Token header into Claims. It returns
// an error wrapping ErrMalformedToken for a token it cannot parse.
type Verifier interface {
	Verify(ctx context.Context, token string) (Claims, error)
}

// RawVerifier accepts a raw decimal epoch (see ParseEpoch). A raw epoch names
// neither resource nor holder: the route or the request must name the
// resource.
type RawVerifier struct{}

// Verify parses token as a raw decimal epoch.
func (RawVerifier) Verify(_ context.Context, token string) (Claims, error) {
	e, err := ParseEpoch(token)
	if err != nil {
		return Claims{}, err
	}
	return Claims{Epoch: e}, nil
}
