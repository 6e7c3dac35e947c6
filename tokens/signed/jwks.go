package signed

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// jwk is the public JSON Web Key (RFC 7517, RFC 7518 §6.2, RFC 8037 §2) of
// one asymmetric verification key.
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y,omitempty"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// JWKS returns the keyring's asymmetric verification keys as an RFC 7517
// JWK Set, {"keys":[...]}, each key with kty, crv, x (and y for P-256), kid,
// alg and use "sig", in keyring order (the signing key first). HS256 secrets
// are never included; a keyring with only HS256 keys yields {"keys":[]}.
// Serve it so that upstreams that can check tokens verify them themselves.
func (r *Keyring) JWKS() ([]byte, error) {
	set := struct {
		Keys []jwk `json:"keys"`
	}{Keys: []jwk{}}
	for _, k := range r.order {
		if k.IsSymmetric() {
			continue
		}
		j, err := publicJWK(k)
		if err != nil {
			return nil, err
		}
		j.Kid, j.Alg, j.Use = k.ID, k.Alg, "sig"
		set.Keys = append(set.Keys, j)
	}
	return json.Marshal(set)
}

// publicJWK returns the key-type members (kty, crv, x, y) of k's public key.
func publicJWK(k *Key) (jwk, error) {
	b64 := base64.RawURLEncoding.EncodeToString
	switch pub := k.public.(type) {
	case ed25519.PublicKey:
		return jwk{Kty: "OKP", Crv: "Ed25519", X: b64(pub)}, nil
	case *ecdsa.PublicKey:
		x, y, err := ecCoordinates(pub)
		if err != nil {
			return jwk{}, fmt.Errorf("%s: %w", k, err)
		}
		return jwk{Kty: "EC", Crv: "P-256", X: b64(x), Y: b64(y)}, nil
	}
	return jwk{}, fmt.Errorf("%s: no public key", k)
}

// ecCoordinates returns the fixed-length (32-byte) big-endian x and y of a
// P-256 public key.
func ecCoordinates(pub *ecdsa.PublicKey) (x, y []byte, err error) {
	b, err := pub.Bytes()
	if err != nil {
		return nil, nil, fmt.Errorf("encode P-256 public key: %w", err)
	}
	if len(b) != 65 || b[0] != 4 {
		return nil, nil, fmt.Errorf("encode P-256 public key: unexpected %d-byte encoding", len(b))
	}
	return b[1:33], b[33:], nil
}

// thumbprint returns the RFC 7638 JWK thumbprint of k (SHA-256, base64url
// without padding): the digest of the required members in lexicographic
// order without whitespace. For HS256 that is {"k":...,"kty":"oct"}.
func (k *Key) thumbprint() (string, error) {
	var canon string
	if k.secret != nil {
		canon = `{"k":"` + base64.RawURLEncoding.EncodeToString(k.secret) + `","kty":"oct"}`
	} else {
		j, err := publicJWK(k)
		if err != nil {
			return "", err
		}
		if j.Kty == "OKP" {
			canon = `{"crv":"` + j.Crv + `","kty":"OKP","x":"` + j.X + `"}`
		} else {
			canon = `{"crv":"` + j.Crv + `","kty":"EC","x":"` + j.X + `","y":"` + j.Y + `"}`
		}
	}
	sum := sha256.Sum256([]byte(canon))
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}
