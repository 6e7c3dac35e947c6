package signed

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
)

// PEM block types and headers understood by ParseKeyPEM.
const (
	// SecretPEMType is the PEM block type of an HS256 secret; the block's
	// bytes are the raw secret.
	SecretPEMType = "FENCEGW HS256 SECRET"
	// KeyIDHeader is the PEM header carrying the key id.
	KeyIDHeader = "Kid"
	// AlgHeader is the PEM header carrying the algorithm.
	AlgHeader = "Alg"
)

// maxKeyFileSize bounds what LoadKeyFile reads.
const maxKeyFileSize = 64 << 10

// MarshalPrivatePEM encodes k's private material as one PEM block that
// ParseKeyPEM reads back as an equal key: PKCS#8 ("PRIVATE KEY") for EdDSA
// and ES256, a SecretPEMType block holding the raw secret for HS256. It fails
// for a key without private material. The result is secret: write it with
// mode 0600.
//
// The block carries only the headers ParseKeyPEM could not derive (see
// pemHeaders): none for a generated EdDSA or ES256 key, whose PEM is then
// the standard form that OpenSSL and other tools read.
func (k *Key) MarshalPrivatePEM() ([]byte, error) {
	if err := k.validate(); err != nil {
		return nil, err
	}
	block := &pem.Block{Headers: k.pemHeaders()}
	switch {
	case k.secret != nil:
		block.Type, block.Bytes = SecretPEMType, bytes.Clone(k.secret)
	case k.signer != nil:
		der, err := x509.MarshalPKCS8PrivateKey(k.signer)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		block.Type, block.Bytes = "PRIVATE KEY", der
	default:
		return nil, fmt.Errorf("%s holds no private material", k)
	}
	return encodePEM(block)
}

// MarshalPublicPEM encodes k's public key as a PKIX "PUBLIC KEY" PEM block,
// with the headers of pemHeaders, for distributing verification keys. It
// fails for HS256, whose secret has no public half.
func (k *Key) MarshalPublicPEM() ([]byte, error) {
	if err := k.validate(); err != nil {
		return nil, err
	}
	if k.secret != nil {
		return nil, fmt.Errorf("%s is a shared secret and has no public half", k)
	}
	der, err := x509.MarshalPKIXPublicKey(k.public)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k, err)
	}
	return encodePEM(&pem.Block{
		Type:    "PUBLIC KEY",
		Headers: k.pemHeaders(),
		Bytes:   der,
	})
}

// pemHeaders returns the PEM headers that k's encoding needs for
// ParseKeyPEM to return k's ID and Alg: none for an EdDSA or ES256 key whose
// ID is its thumbprint (both follow from the key), since OpenSSL 3 refuses
// PEM headers on a key; Kid alone for such a key with another ID (its PEM
// is then fencegw's own); Kid and Alg for an HS256 secret, whose random ID
// cannot be derived and whose block no other tool reads anyway. Files
// written with headers before this still load.
func (k *Key) pemHeaders() map[string]string {
	if k.secret != nil {
		return map[string]string{KeyIDHeader: k.ID, AlgHeader: k.Alg}
	}
	if id, err := k.thumbprint(); err == nil && id == k.ID {
		return nil
	}
	return map[string]string{KeyIDHeader: k.ID}
}

func encodePEM(b *pem.Block) ([]byte, error) {
	var buf bytes.Buffer
	if err := pem.Encode(&buf, b); err != nil {
		return nil, fmt.Errorf("encode PEM: %w", err)
	}
	return buf.Bytes(), nil
}

// ParseKeyPEM reads one key from data, which must hold exactly one PEM
// block:
//
//   - "PRIVATE KEY" (PKCS#8) holding an Ed25519 or P-256 private key;
//   - "EC PRIVATE KEY" (SEC 1) holding a P-256 private key;
//   - "PUBLIC KEY" (PKIX) holding an Ed25519 or P-256 public key;
//   - SecretPEMType holding an HS256 secret of at least MinSecretLen bytes.
//
// The algorithm follows from the key type (Ed25519 → EdDSA, P-256 → ES256,
// the secret block → HS256); an Alg header, when present, must agree. The key
// id is the Kid header or, when absent, the key's RFC 7638 JWK thumbprint.
// RSA keys, other curves, X25519, short secrets and encrypted PEM blocks are
// refused with errors wrapping ErrUnsupportedKey or naming the problem.
// Errors never echo the key material.
func ParseKeyPEM(data []byte) (*Key, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, errors.New("parse key: no PEM block found")
	}
	if next, _ := pem.Decode(rest); next != nil {
		return nil, errors.New("parse key: more than one PEM block")
	}
	if _, ok := block.Headers["Proc-Type"]; ok {
		return nil, fmt.Errorf("parse key: %w: encrypted PEM blocks are not supported", ErrUnsupportedKey)
	}
	k, err := keyFromBlock(block)
	if err != nil {
		return nil, fmt.Errorf("parse key: %w", err)
	}
	if alg, ok := block.Headers[AlgHeader]; ok && alg != k.Alg {
		return nil, fmt.Errorf("parse key: %s header %q does not match the %s key in the block", AlgHeader, alg, k.Alg)
	}
	if kid, ok := block.Headers[KeyIDHeader]; ok {
		if err := validateKeyID(kid); err != nil {
			return nil, fmt.Errorf("parse key: %s header: %w", KeyIDHeader, err)
		}
		k.ID = kid
	} else if k.ID, err = k.thumbprint(); err != nil {
		return nil, fmt.Errorf("parse key: %w", err)
	}
	if err := k.validate(); err != nil {
		return nil, fmt.Errorf("parse key: %w", err)
	}
	return k, nil
}

// keyFromBlock decodes the material of one PEM block into a Key without ID.
func keyFromBlock(block *pem.Block) (*Key, error) {
	var raw any
	var err error
	switch block.Type {
	case SecretPEMType:
		if len(block.Bytes) < MinSecretLen {
			return nil, fmt.Errorf("%w: HS256 secret of %d bytes, want at least %d", ErrUnsupportedKey, len(block.Bytes), MinSecretLen)
		}
		return &Key{Alg: AlgHS256, secret: bytes.Clone(block.Bytes)}, nil
	case "PRIVATE KEY":
		raw, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		raw, err = x509.ParseECPrivateKey(block.Bytes)
	case "PUBLIC KEY":
		raw, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PRIVATE KEY", "RSA PUBLIC KEY":
		return nil, fmt.Errorf("%w: RSA keys are not supported (use Ed25519 or P-256)", ErrUnsupportedKey)
	case "ENCRYPTED PRIVATE KEY":
		return nil, fmt.Errorf("%w: encrypted private keys are not supported", ErrUnsupportedKey)
	default:
		return nil, fmt.Errorf("%w: PEM block type %q (want PRIVATE KEY, EC PRIVATE KEY, PUBLIC KEY or %s)", ErrUnsupportedKey, block.Type, SecretPEMType)
	}
	if err != nil {
		return nil, fmt.Errorf("%s block: %w", block.Type, err)
	}
	return keyFromCrypto(raw)
}

// keyFromCrypto wraps a parsed crypto key into a Key without ID.
func keyFromCrypto(raw any) (*Key, error) {
	switch key := raw.(type) {
	case ed25519.PrivateKey:
		return &Key{Alg: AlgEdDSA, signer: key, public: key.Public()}, nil
	case ed25519.PublicKey:
		return &Key{Alg: AlgEdDSA, public: key}, nil
	case *ecdsa.PrivateKey:
		if err := checkCurve(key.Curve); err != nil {
			return nil, err
		}
		return &Key{Alg: AlgES256, signer: key, public: &key.PublicKey}, nil
	case *ecdsa.PublicKey:
		if err := checkCurve(key.Curve); err != nil {
			return nil, err
		}
		return &Key{Alg: AlgES256, public: key}, nil
	case *rsa.PrivateKey, *rsa.PublicKey:
		return nil, fmt.Errorf("%w: RSA keys are not supported (use Ed25519 or P-256)", ErrUnsupportedKey)
	case *ecdh.PrivateKey, *ecdh.PublicKey:
		return nil, fmt.Errorf("%w: X25519/ECDH keys cannot sign (use Ed25519 or P-256)", ErrUnsupportedKey)
	}
	return nil, fmt.Errorf("%w: key type %T", ErrUnsupportedKey, raw)
}

func checkCurve(c elliptic.Curve) error {
	if c != elliptic.P256() {
		name := "unknown"
		if c != nil && c.Params() != nil {
			name = c.Params().Name
		}
		return fmt.Errorf("%w: ECDSA curve %s (ES256 needs P-256)", ErrUnsupportedKey, name)
	}
	return nil
}

// LoadKeyFile reads a key from the PEM file at path (see ParseKeyPEM). Files
// larger than 64 KiB are refused.
func LoadKeyFile(path string) (*Key, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load key: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("load key %s: %w", path, err)
	}
	if len(data) > maxKeyFileSize {
		return nil, fmt.Errorf("load key %s: file larger than %d bytes", path, maxKeyFileSize)
	}
	k, err := ParseKeyPEM(data)
	if err != nil {
		return nil, fmt.Errorf("load key %s: %w", path, err)
	}
	return k, nil
}
