package signed

import (
	"errors"
	"fmt"

	"github.com/fencegw/fencegw/tokens"
)

var (
	// ErrUnauthenticated is wrapped by every error a Verifier returns for a
	// token it refuses: bad structure, claims that do not decode (of the
	// wrong type, or a claim name repeated or differing only in case),
	// unknown key id, algorithm mismatch, bad signature, expiry, iat in the
	// future, wrong issuer or audience, missing claims. The
	// gateway maps it to 401, for unparseable tokens too (whose errors also
	// wrap tokens.ErrMalformedToken). It is the domain's
	// tokens.ErrUnauthenticated.
	ErrUnauthenticated = tokens.ErrUnauthenticated

	// ErrUnsupportedKey is wrapped by the errors of GenerateKey, ParseKeyPEM
	// and NewKeyring for key material fencegw does not sign with: RSA keys,
	// curves other than P-256, X25519, HMAC secrets shorter than
	// MinSecretLen, unknown algorithms.
	ErrUnsupportedKey = errors.New("unsupported key")
)

// unauthenticated returns an error wrapping ErrUnauthenticated. reason must
// name the failed check and must not contain any part of the token.
func unauthenticated(reason string) error {
	return fmt.Errorf("%w: %s", ErrUnauthenticated, reason)
}

// malformed returns an error wrapping both ErrUnauthenticated and
// tokens.ErrMalformedToken, for a token that cannot be parsed.
func malformed(reason string) error {
	return fmt.Errorf("%w: %w: %s", ErrUnauthenticated, tokens.ErrMalformedToken, reason)
}
