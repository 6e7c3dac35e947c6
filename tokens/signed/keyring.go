package signed

import (
	"errors"
	"fmt"
	"slices"
)

// Keyring holds at most one signing key and the verification keys that
// tokens may be checked against, by key id. Rotation: sign with the new key
// and keep the old key's public half in the keyring until every token it
// signed has expired; then build a keyring without it.
//
// A Keyring is immutable and safe for concurrent use. It holds copies of the
// Keys given to NewKeyring: later changes to those Keys do not affect it.
type Keyring struct {
	signing *Key            // nil for a verification-only keyring
	byID    map[string]*Key // kid → verification key (public half or HS256 secret)
	order   []*Key          // verification keys, the signing key's half first
	algs    []string        // distinct algorithms of the verification keys, sorted
}

// NewKeyring returns a keyring that signs with signing and verifies with the
// public half of signing and with every key in verify (a private key given
// in verify contributes only its public half). signing may be nil for a
// verification-only keyring (a gateway replica that never issues tokens);
// then verify must not be empty.
//
// It fails when signing holds no private material, when any key is nil,
// holds no material or has an illegal id, or when two keys share an id but
// not their algorithm and material. The same key given twice is kept once.
func NewKeyring(signing *Key, verify ...*Key) (*Keyring, error) {
	r := &Keyring{byID: make(map[string]*Key, len(verify)+1)}
	if signing != nil {
		if err := signing.validate(); err != nil {
			return nil, fmt.Errorf("keyring: signing key: %w", err)
		}
		if !signing.CanSign() {
			return nil, fmt.Errorf("keyring: signing %s holds no private material", signing)
		}
		r.signing = signing.clone()
		r.add(r.signing.Public())
	} else if len(verify) == 0 {
		return nil, errors.New("keyring: no keys")
	}
	for i, k := range verify {
		if k == nil {
			return nil, fmt.Errorf("keyring: verification key %d is nil", i)
		}
		if err := k.validate(); err != nil {
			return nil, fmt.Errorf("keyring: verification key %d: %w", i, err)
		}
		pub := k.Public().clone()
		if old, ok := r.byID[pub.ID]; ok {
			if !sameMaterial(old, pub) {
				return nil, fmt.Errorf("keyring: two different keys share the key id %q", pub.ID)
			}
			continue
		}
		r.add(pub)
	}
	return r, nil
}

func (r *Keyring) add(k *Key) {
	r.byID[k.ID] = k
	r.order = append(r.order, k)
	if !slices.Contains(r.algs, k.Alg) {
		r.algs = append(r.algs, k.Alg)
		slices.Sort(r.algs)
	}
}

// SigningKeyID returns the id of the signing key, or "" for a
// verification-only keyring.
func (r *Keyring) SigningKeyID() string {
	if r.signing == nil {
		return ""
	}
	return r.signing.ID
}

// KeyIDs returns the ids of the verification keys, the signing key's first.
func (r *Keyring) KeyIDs() []string {
	ids := make([]string, len(r.order))
	for i, k := range r.order {
		ids[i] = k.ID
	}
	return ids
}

// lookup returns the verification key with id kid.
func (r *Keyring) lookup(kid string) (*Key, bool) {
	k, ok := r.byID[kid]
	return k, ok
}
