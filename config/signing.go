package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

func (s *Signing) validate() []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: "signing." + field, Msg: fmt.Sprintf(format, args...)})
	}
	if s.Issuer == "" {
		bad("issuer", "required")
	}
	if s.Audience == "" {
		bad("audience", "required")
	}
	if s.TokenLifetime.D() < time.Second || s.TokenLifetime.D() > 24*time.Hour {
		bad("token_lifetime", "must be from 1s to 24h, got %s", s.TokenLifetime.D())
	}
	switch s.Algorithm {
	case "EdDSA", "ES256", "HS256":
	default:
		bad("algorithm", "must be EdDSA, ES256 or HS256, got %q", s.Algorithm)
	}
	for i, f := range s.VerifyKeyFiles {
		if f == "" {
			bad(fmt.Sprintf("verify_key_files[%d]", i), "empty path")
		}
	}
	return errs
}

func validateAPIKeys(keys []APIKey) []error {
	var errs []error
	names := map[string]bool{}
	hashes := map[string]int{} // the index of the first key of each hash
	for i, k := range keys {
		at := fmt.Sprintf("api_keys[%d]", i)
		bad := func(field, format string, args ...any) {
			errs = append(errs, &FieldError{Field: at + "." + field, Msg: fmt.Sprintf(format, args...)})
		}
		if k.Name == "" {
			bad("name", "required")
		} else if err := tokens.ValidateOwner(k.Name); err != nil {
			// The name owns the key's leases in the store.
			bad("name", "%q: at most %d bytes of UTF-8 without control characters", k.Name, tokens.MaxOwnerLen)
		} else if names[k.Name] {
			bad("name", "%q is used by another key", k.Name)
		}
		names[k.Name] = true
		if b, err := hex.DecodeString(k.SHA256); err != nil || len(b) != sha256.Size {
			bad("sha256", "must be 64 hex digits (the key's SHA-256; see fencegw keys api-key)")
		} else if j, dup := hashes[string(b)]; dup {
			// One secret would be two keys, and the last one would decide.
			bad("sha256", "the same key as api_keys[%d] (%q): each key needs its own secret", j, keys[j].Name)
		} else {
			hashes[string(b)] = i
		}
		if len(k.Leases) == 0 && !k.Admin {
			bad("leases", "a non-admin key needs at least one lease-name pattern")
		}
		for j, p := range k.Leases {
			if _, err := path.Match(p, ""); err != nil || p == "" {
				bad(fmt.Sprintf("leases[%d]", j), "%q is not a valid pattern", p)
			}
		}
	}
	return errs
}
