// Package signed issues and verifies fencegw's epoch-signed fencing tokens:
// compact JWTs (RFC 7519, github.com/golang-jwt/jwt/v5) that carry the
// fencing epoch of a lease grant.
//
// A token has the header members "alg", "typ" and "kid", and the claims
//
//	iss    the issuer configured on the Signer
//	aud    the one audience configured on the Signer (a JSON string)
//	sub    the lease holder
//	res    the fenced resource
//	epoch  the fencing epoch, a positive JSON integer (int64, exact above 2^53)
//	iat    issued-at, whole seconds
//	exp    expiry, whole seconds
//
// Algorithms: EdDSA (Ed25519) is the default; ES256 (P-256) and HS256 are
// available by configuration. A Keyring holds one signing key and any number
// of verification keys, so a rotated-out key keeps verifying the tokens it
// signed for as long as its public half stays in the keyring. Keyring.JWKS
// serves the asymmetric public keys (never an HS256 secret) so that upstreams
// that can check tokens may do so themselves.
//
// A Verifier pins the algorithm per key: the header's "kid" selects the key
// and the header's "alg" must equal that key's algorithm, so "none", unknown
// key ids and the HS256-with-a-public-key confusion are refused. It reads
// each claim under its exact name only (a case twin such as "EPOCH", or a
// claim given twice, makes the token malformed), requires exp and iat,
// checks iss and aud exactly, allows a small leeway for clock skew on exp
// and iat (a token issued further in the future is refused), and requires a
// positive epoch and non-empty res and sub. Every refusal wraps ErrUnauthenticated; a token that cannot even be
// parsed also wraps tokens.ErrMalformedToken. Error messages name the check
// that failed and never echo the token.
//
// Verifying an Ed25519 signature costs about 0.1 ms, more than proxying a
// request, so a Verifier keeps a bounded cache of verified tokens until their
// expiry.
//
// The epoch fences; exp only bounds the life of a leaked token. A token's
// lifetime is independent of the lease TTL.
package signed
