package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/signed"
)

// authority is the token authority: its keys, the signer of lease tokens and
// the verifier of signed routes.
type authority struct {
	keys     *signed.Keyring
	signer   *signed.Signer
	verifier *signed.Verifier
}

// Issue signs a lease's epoch for its holder; it implements
// gateway.TokenIssuer.
func (a *authority) Issue(holder, resource string, epoch int64) (string, time.Time, error) {
	return a.signer.Sign(holder, resource, epoch, time.Now())
}

// sharedKeyName is the name under which a shared store keeps a generated
// signing key.
const sharedKeyName = "signing-key"

// newAuthority loads the configured keys or, without a key file, the key the
// store keeps: beside the embedded store's file, or in a shared store, where
// every replica finds the same one. The key is generated on first use.
func newAuthority(ctx context.Context, c config.Config, store tokens.Store, log *slog.Logger) (*authority, error) {
	signing, err := signingKey(ctx, c, store, log)
	if err != nil {
		return nil, err
	}
	var verify []*signed.Key
	for i, f := range c.Signing.VerifyKeyFiles {
		k, err := signed.LoadKeyFile(f)
		if err != nil {
			return nil, fmt.Errorf("signing.verify_key_files[%d]: %w", i, err)
		}
		verify = append(verify, k)
	}
	ring, err := signed.NewKeyring(signing, verify...)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	v, err := signed.NewVerifier(ring, c.Signing.Issuer, c.Signing.Audience)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	s, err := signed.NewSigner(ring, c.Signing.Issuer, c.Signing.Audience, c.Signing.TokenLifetime.D())
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	return &authority{keys: ring, signer: s, verifier: v}, nil
}

func signingKey(ctx context.Context, c config.Config, store tokens.Store, log *slog.Logger) (*signed.Key, error) {
	if c.Signing.KeyFile != "" {
		k, err := signed.LoadKeyFile(c.Signing.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("signing.key_file: %w", err)
		}
		if !k.CanSign() {
			return nil, fmt.Errorf("signing.key_file: %s holds a public key; a signing key is private", c.Signing.KeyFile)
		}
		return k, nil
	}
	fresh, err := signed.GenerateKey(c.Signing.Algorithm)
	if err != nil {
		return nil, fmt.Errorf("signing: generate key: %w", err)
	}
	pem, err := fresh.MarshalPrivatePEM()
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	var kept []byte
	if config.KindOf(c.Store) == config.StoreEmbedded {
		kept, err = keepKeyFile(c.Store+".signing-key.pem", pem)
	} else {
		keeper, ok := store.(tokens.KeyKeeper)
		if !ok {
			return nil, errors.New("signing.key_file: required with this store")
		}
		kept, err = keeper.KeepKey(ctx, sharedKeyName, pem)
		if err == nil {
			log.Warn("using the signing key kept in the shared store: whoever can read the store can mint tokens; set signing.key_file in production")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("signing: keep generated key: %w", err)
	}
	k, err := signed.ParseKeyPEM(kept)
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
