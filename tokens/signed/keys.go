package signed

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"

	"github.com/golang-jwt/jwt/v5"
)

// Algorithm names, as they appear in a token's "alg" header and in Key.Alg.
const (
	// AlgEdDSA is Ed25519 (RFC 8037), the default.
	AlgEdDSA = "EdDSA"
	// AlgES256 is ECDSA on P-256 with SHA-256 (RFC 7518 §3.4).
	AlgES256 = "ES256"
	// AlgHS256 is HMAC-SHA-256 with a shared secret (RFC 7518 §3.2). Every
	// verifier then holds the power to sign: prefer EdDSA.
	AlgHS256 = "HS256"
)

// MinSecretLen is the shortest HS256 secret, in bytes, that fencegw accepts
// (RFC 7518 §3.2 requires a key at least as long as the hash output).
const MinSecretLen = 32

// MaxKeyIDLen is the longest key id, in bytes, that fencegw accepts.
const MaxKeyIDLen = 128

// Key is one signing or verification key. A Key is built by GenerateKey,
// ParseKeyPEM or LoadKeyFile; a Key literal holds no material and is refused
// everywhere. The material is immutable; ID and Alg are exported for
// reading, and NewKeyring refuses a Key whose Alg no longer matches its
// material. Keyrings copy the Keys they are given.
type Key struct {
	// ID is the key id, the token header's "kid": 1 to MaxKeyIDLen printable
	// ASCII characters without spaces.
	ID string
	// Alg is AlgEdDSA, AlgES256 or AlgHS256.
	Alg string

	signer crypto.Signer    // ed25519.PrivateKey or *ecdsa.PrivateKey; nil for a public key or HS256
	public crypto.PublicKey // ed25519.PublicKey or *ecdsa.PublicKey; nil for HS256
	secret []byte           // HS256 only
}

// GenerateKey returns a new random key for alg (AlgEdDSA when alg is
// empty). The key id of an asymmetric key is its RFC 7638 JWK thumbprint;
// an HS256 key gets a random id (base64url of 8 random bytes), so that no
// digest of the secret travels in token headers. An HS256 secret is
// MinSecretLen random bytes.
func GenerateKey(alg string) (*Key, error) {
	if alg == "" {
		alg = AlgEdDSA
	}
	k := &Key{Alg: alg}
	switch alg {
	case AlgEdDSA:
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("generate Ed25519 key: %w", err)
		}
		k.signer, k.public = priv, pub
	case AlgES256:
		priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("generate P-256 key: %w", err)
		}
		k.signer, k.public = priv, &priv.PublicKey
	case AlgHS256:
		k.secret = make([]byte, MinSecretLen)
		if _, err := rand.Read(k.secret); err != nil {
			return nil, fmt.Errorf("generate HS256 secret: %w", err)
		}
		id := make([]byte, 8)
		if _, err := rand.Read(id); err != nil {
			return nil, fmt.Errorf("generate key id: %w", err)
		}
		k.ID = base64.RawURLEncoding.EncodeToString(id)
		return k, nil
	default:
		return nil, fmt.Errorf("%w: algorithm %q (want %s, %s or %s)", ErrUnsupportedKey, alg, AlgEdDSA, AlgES256, AlgHS256)
	}
	id, err := k.thumbprint()
	if err != nil {
		return nil, err
	}
	k.ID = id
	return k, nil
}

// Public returns the verification half of k: a Key with the same ID and Alg
// and only the public key. For HS256 the secret is both halves, so Public
// returns k itself; IsSymmetric reports it, and JWKS never publishes it.
func (k *Key) Public() *Key {
	if k == nil || k.secret != nil {
		return k
	}
	return &Key{ID: k.ID, Alg: k.Alg, public: k.public}
}

// CanSign reports whether k holds private material (a private key or an
// HS256 secret).
func (k *Key) CanSign() bool {
	return k != nil && (k.signer != nil || k.secret != nil)
}

// IsSymmetric reports whether k is an HS256 secret, which signs as well as
// verifies and must never be published.
func (k *Key) IsSymmetric() bool {
	return k != nil && k.secret != nil
}

// String returns the key's id and algorithm; never its material.
func (k *Key) String() string {
	if k == nil {
		return "<nil key>"
	}
	return fmt.Sprintf("%s key %q", k.Alg, k.ID)
}

// validate checks that ID is a legal key id and that Alg matches the
// material.
func (k *Key) validate() error {
	if k == nil {
		return fmt.Errorf("nil key")
	}
	if err := validateKeyID(k.ID); err != nil {
		return err
	}
	switch k.Alg {
	case AlgEdDSA:
		pub, ok := k.public.(ed25519.PublicKey)
		if !ok || len(pub) != ed25519.PublicKeySize {
			return fmt.Errorf("%s: no Ed25519 public key (build keys with GenerateKey or ParseKeyPEM)", k)
		}
		if k.signer != nil {
			priv, ok := k.signer.(ed25519.PrivateKey)
			if !ok || len(priv) != ed25519.PrivateKeySize || !bytes.Equal(priv.Public().(ed25519.PublicKey), pub) {
				return fmt.Errorf("%s: private key does not match", k)
			}
		}
	case AlgES256:
		pub, ok := k.public.(*ecdsa.PublicKey)
		if !ok || pub.Curve != elliptic.P256() {
			return fmt.Errorf("%s: no P-256 public key (build keys with GenerateKey or ParseKeyPEM)", k)
		}
		if k.signer != nil {
			priv, ok := k.signer.(*ecdsa.PrivateKey)
			if !ok || !priv.PublicKey.Equal(pub) {
				return fmt.Errorf("%s: private key does not match", k)
			}
		}
	case AlgHS256:
		if len(k.secret) < MinSecretLen {
			return fmt.Errorf("%w: %s: secret shorter than %d bytes", ErrUnsupportedKey, k, MinSecretLen)
		}
		if k.public != nil || k.signer != nil {
			return fmt.Errorf("%s: HS256 key holds asymmetric material", k)
		}
	default:
		return fmt.Errorf("%w: %s: algorithm %q (want %s, %s or %s)", ErrUnsupportedKey, k, k.Alg, AlgEdDSA, AlgES256, AlgHS256)
	}
	return nil
}

// validateKeyID checks a key id: 1 to MaxKeyIDLen bytes of printable ASCII
// without spaces (it travels in token headers and PEM headers).
func validateKeyID(id string) error {
	if id == "" {
		return fmt.Errorf("empty key id")
	}
	if len(id) > MaxKeyIDLen {
		return fmt.Errorf("key id longer than %d bytes", MaxKeyIDLen)
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return fmt.Errorf("key id holds a byte outside printable ASCII at offset %d", i)
		}
	}
	return nil
}

// clone returns a copy of k that shares no mutable state with it.
func (k *Key) clone() *Key {
	c := *k
	if k.secret != nil {
		c.secret = bytes.Clone(k.secret)
	}
	return &c
}

// sameMaterial reports whether a and b have the same algorithm and the same
// verification material.
func sameMaterial(a, b *Key) bool {
	if a.Alg != b.Alg {
		return false
	}
	switch a.Alg {
	case AlgEdDSA:
		ap, _ := a.public.(ed25519.PublicKey)
		bp, _ := b.public.(ed25519.PublicKey)
		return ap.Equal(bp)
	case AlgES256:
		ap, _ := a.public.(*ecdsa.PublicKey)
		bp, _ := b.public.(*ecdsa.PublicKey)
		return ap != nil && bp != nil && ap.Equal(bp)
	case AlgHS256:
		return len(a.secret) == len(b.secret) && subtle.ConstantTimeCompare(a.secret, b.secret) == 1
	}
	return false
}

// method returns the jwt signing method for k.Alg.
func (k *Key) method() jwt.SigningMethod {
	switch k.Alg {
	case AlgEdDSA:
		return jwt.SigningMethodEdDSA
	case AlgES256:
		return jwt.SigningMethodES256
	case AlgHS256:
		return jwt.SigningMethodHS256
	}
	return nil
}

// signingMaterial returns what jwt's SigningMethod.Sign expects for k.
func (k *Key) signingMaterial() any {
	if k.secret != nil {
		return k.secret
	}
	return k.signer
}

// verificationMaterial returns what jwt's SigningMethod.Verify expects for
// k: ed25519.PublicKey, *ecdsa.PublicKey or the HS256 secret as []byte.
func (k *Key) verificationMaterial() any {
	if k.secret != nil {
		return k.secret
	}
	return k.public
}
