package signed

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
)

// errECPointTooLong is the error of a P-256 JWK coordinate wider than the
// curve's 256 bits.
var errECPointTooLong = errors.New("P-256 coordinate longer than 32 bytes")

// ParseJWKS reads the Ed25519 and P-256 public keys of a JWK set, such as
// Keyring.JWKS writes, each with its key id and algorithm. Keys of other
// types are skipped; a set with none of these is an error.
func ParseJWKS(data []byte) ([]*Key, error) {
	var set struct {
		Keys []struct{ Kty, Crv, X, Y, Kid, Alg string } `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	var keys []*Key
	for _, j := range set.Keys {
		x, err := base64.RawURLEncoding.DecodeString(j.X)
		if err != nil {
			return nil, fmt.Errorf("JWKS key %s: %w", j.Kid, err)
		}
		var pub any
		switch {
		case j.Kty == "OKP" && j.Crv == "Ed25519" && len(x) == ed25519.PublicKeySize:
			pub = ed25519.PublicKey(x)
		case j.Kty == "EC" && j.Crv == "P-256":
			y, err := base64.RawURLEncoding.DecodeString(j.Y)
			if err != nil {
				return nil, fmt.Errorf("JWKS key %s: %w", j.Kid, err)
			}
			// The coordinates as big-endian numbers, so leading zero bytes
			// beyond the field's 32 are accepted.
			bx, by := new(big.Int).SetBytes(x), new(big.Int).SetBytes(y)
			if bx.BitLen() > 256 || by.BitLen() > 256 {
				return nil, fmt.Errorf("JWKS key %s: %w", j.Kid, errECPointTooLong)
			}
			point := make([]byte, 65)
			point[0] = 4 // uncompressed
			bx.FillBytes(point[1:33])
			by.FillBytes(point[33:])
			ec, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point)
			if err != nil {
				return nil, fmt.Errorf("JWKS key %s: %w", j.Kid, err)
			}
			pub = ec
		default:
			continue
		}
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			return nil, fmt.Errorf("JWKS key %s: %w", j.Kid, err)
		}
		k, err := ParseKeyPEM(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der,
			Headers: map[string]string{KeyIDHeader: j.Kid, AlgHeader: j.Alg}}))
		if err != nil {
			return nil, fmt.Errorf("JWKS key %s: %w", j.Kid, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("JWKS holds no Ed25519 or P-256 key")
	}
	return keys, nil
}
