package boltstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fencegw/fencegw/tokens"
)

// idemBucket holds the idempotency records, under resource NUL key.
var idemBucket = []byte("idempotency")

// idemEntry is an idempotency record as kept on disk, with its expiry on
// the wall clock.
type idemEntry struct {
	tokens.IdemRecord
	ExpiresUnix int64 `json:"expires_unix_nano"`
}

func idemKey(resource, key string) []byte { return []byte(resource + "\x00" + key) }

// ClaimKey creates rec unless a live record is there; see
// tokens.IdempotencyStore. One bbolt transaction decides and writes.
func (s *Store) ClaimKey(ctx context.Context, resource, key string, rec tokens.IdemRecord, ttl time.Duration) (tokens.IdemRecord, bool, error) {
	if err := begin(ctx, "claim", resource, validIdem(resource, key)); err != nil {
		return tokens.IdemRecord{}, false, err
	}
	var (
		got     tokens.IdemRecord
		created bool
	)
	now := time.Now()
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(idemBucket)
		if err != nil {
			return err
		}
		k := idemKey(resource, key)
		if v := b.Get(k); v != nil {
			var e idemEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("corrupt idempotency record for %q: %w", k, err)
			}
			if e.ExpiresUnix > now.UnixNano() {
				got = e.IdemRecord
				return nil
			}
		}
		v, err := json.Marshal(idemEntry{IdemRecord: rec, ExpiresUnix: now.Add(ttl).UnixNano()})
		if err != nil {
			return err
		}
		got, created = rec, true
		return b.Put(k, v)
	})
	if err != nil {
		return tokens.IdemRecord{}, false, &tokens.UnavailableError{Op: "claim", Resource: resource, Err: err}
	}
	return got, created, nil
}

// SettleKey settles claim's pending record; see tokens.IdempotencyStore.
func (s *Store) SettleKey(ctx context.Context, resource, key, claim string, rec *tokens.IdemRecord) error {
	if err := validIdem(resource, key); err != nil {
		return err
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(idemBucket)
		if err != nil {
			return err
		}
		k := idemKey(resource, key)
		v := b.Get(k)
		if v == nil {
			return tokens.ErrClaimLost
		}
		var e idemEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("corrupt idempotency record for %q: %w", k, err)
		}
		if e.Claim != claim || e.State != tokens.IdemPending {
			return tokens.ErrClaimLost
		}
		if rec == nil {
			return b.Delete(k)
		}
		e.IdemRecord = *rec
		v, err = json.Marshal(e)
		if err != nil {
			return err
		}
		return b.Put(k, v)
	})
	switch {
	case err == tokens.ErrClaimLost:
		return err
	case err != nil:
		return &tokens.UnavailableError{Op: "settle", Resource: resource, Err: err}
	}
	return nil
}

// PurgeKeys deletes up to limit records whose expiry passed on the wall
// clock; see tokens.IdempotencyStore.
func (s *Store) PurgeKeys(ctx context.Context, limit int) (int, error) {
	n := 0
	now := time.Now().UnixNano()
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(idemBucket)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil && n < limit; {
			var e idemEntry
			if json.Unmarshal(v, &e) != nil || e.ExpiresUnix <= now {
				at := append([]byte(nil), k...)
				if err := c.Delete(); err != nil {
					return err
				}
				n++
				k, v = c.Seek(at) // after Delete, Next would skip one
				continue
			}
			k, v = c.Next()
		}
		return nil
	})
	if err != nil {
		return n, &tokens.UnavailableError{Op: "purge", Err: err}
	}
	return n, nil
}

// ForgetKey deletes the record of resource and key; see
// tokens.IdempotencyStore.
func (s *Store) ForgetKey(ctx context.Context, resource, key string) (bool, error) {
	if err := validIdem(resource, key); err != nil {
		return false, err
	}
	found := false
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(idemBucket)
		if b == nil {
			return nil
		}
		k := idemKey(resource, key)
		if found = b.Get(k) != nil; !found {
			return nil
		}
		return b.Delete(k)
	})
	if err != nil {
		return false, &tokens.UnavailableError{Op: "forget", Resource: resource, Err: err}
	}
	return found, nil
}

func validIdem(resource, key string) error {
	if err := tokens.ValidateResource(resource); err != nil {
		return err
	}
	return tokens.ValidateIdemKey(key)
}
