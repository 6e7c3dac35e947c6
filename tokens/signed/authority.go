package signed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// Authority is the token authority: its keys, the signer of lease tokens
// and the verifier of signed routes, all over one Keyring.
type Authority struct {
	Keys     *Keyring
	Signer   *Signer
	Verifier *Verifier

	clock tokens.Clock // iat of issued tokens; nil: the system clock
}

// AuthorityOptions say where the authority's keys come from and what its
// tokens claim. Field names in errors are the configuration's (signing.*).
type AuthorityOptions struct {
	// KeyFile is the PEM signing key. Empty: a key of Algorithm is
	// generated once and kept — in KeepBeside's file when set, else by
	// Keeper, so every replica of a shared store signs with the same.
	KeyFile   string
	Algorithm string
	// KeepBeside is the file a generated key is kept in (mode 0600): the
	// embedded store's path plus ".signing-key.pem".
	KeepBeside string
	// Keeper keeps a generated key in a shared store.
	Keeper tokens.KeyKeeper
	// VerifyKeyFiles are further public keys that verify tokens (rotation).
	VerifyKeyFiles []string
	// Issuer, Audience and Lifetime are the tokens' iss, aud and validity.
	Issuer, Audience string
	Lifetime         time.Duration
	// VerifierOptions tune the verifier (a clock, the cache).
	VerifierOptions []VerifierOption
	// Clock is the wall clock tokens are issued (iat) and checked
	// (iat, exp) on; nil: the system clock. A clock among
	// VerifierOptions overrides it for checking.
	Clock tokens.Clock
}

// SharedKeyName is the name under which a shared store keeps a generated
// signing key.
const SharedKeyName = "signing-key"

// NewAuthority loads or generates the signing key and builds the signer
// and verifier. It reports through warn when the key is kept in a shared
// store, where whoever can read the store can mint tokens.
func NewAuthority(ctx context.Context, o AuthorityOptions, warn func(string)) (*Authority, error) {
	signing, err := signingKey(ctx, o, warn)
	if err != nil {
		return nil, err
	}
	var verify []*Key
	for i, f := range o.VerifyKeyFiles {
		k, err := LoadKeyFile(f)
		if err != nil {
			return nil, fmt.Errorf("signing.verify_key_files[%d]: %w", i, err)
		}
		verify = append(verify, k)
	}
	ring, err := NewKeyring(signing, verify...)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	clock := tokens.ClockOr(o.Clock)
	// The signer's tokens live exactly o.Lifetime; a longer-lived one is
	// refused, whoever signed it.
	v, err := NewVerifier(ring, o.Issuer, o.Audience,
		append([]VerifierOption{WithClock(clock.Now), WithMaxLifetime(o.Lifetime)}, o.VerifierOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	s, err := NewSigner(ring, o.Issuer, o.Audience, o.Lifetime)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	return &Authority{Keys: ring, Signer: s, Verifier: v, clock: clock}, nil
}

// Issue signs a lease's epoch for its holder, now on the authority's clock.
func (a *Authority) Issue(holder, resource string, epoch int64) (string, time.Time, error) {
	return a.Signer.Sign(holder, resource, epoch, tokens.ClockOr(a.clock).Now())
}

func signingKey(ctx context.Context, o AuthorityOptions, warn func(string)) (*Key, error) {
	if o.KeyFile != "" {
		k, err := LoadKeyFile(o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("signing.key_file: %w", err)
		}
		if !k.CanSign() {
			return nil, fmt.Errorf("signing.key_file: %s holds a public key; a signing key is private", o.KeyFile)
		}
		return k, nil
	}
	fresh, err := GenerateKey(o.Algorithm)
	if err != nil {
		return nil, fmt.Errorf("signing: generate key: %w", err)
	}
	pem, err := fresh.MarshalPrivatePEM()
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	var kept []byte
	switch {
	case o.KeepBeside != "":
		kept, err = keepKeyFile(o.KeepBeside, pem)
	case o.Keeper != nil:
		kept, err = o.Keeper.KeepKey(ctx, SharedKeyName, pem)
		if err == nil && warn != nil {
			warn("using the signing key kept in the shared store: whoever can read the store can mint tokens; set signing.key_file in production")
		}
	default:
		return nil, errors.New("signing.key_file: required with this store")
	}
	if err != nil {
		return nil, fmt.Errorf("signing: keep generated key: %w", err)
	}
	k, err := ParseKeyPEM(kept)
	if err != nil {
		return nil, fmt.Errorf("signing: kept key: %w", err)
	}
	return k, nil
}

// keepKeyFile creates path with pem (mode 0600) unless it exists, and
// returns the file's contents.
func keepKeyFile(path string, pem []byte) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		if _, err := f.Write(pem); err != nil {
			f.Close()
			os.Remove(path)
			return nil, err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		return pem, nil
	case errors.Is(err, os.ErrExist):
		return os.ReadFile(path)
	default:
		return nil, err
	}
}
