package boltstore

import (
	"context"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/fencegw/fencegw/tokens"
)

// LiveLeases counts the live leases: held, or lapsed without a release and
// still in their lock-delay; see tokens.LeaseCounter. It reads every lease
// record in one read transaction, under the lease lock, so its cost grows
// with the records kept (reclaim bounds them).
func (s *Store) LiveLeases(ctx context.Context) (tokens.LiveCount, error) {
	if err := ctx.Err(); err != nil {
		return tokens.LiveCount{}, &tokens.UnavailableError{Op: "count leases", Err: err}
	}
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	c := tokens.LiveCount{ByOwner: map[string]int{}}
	now := s.now()
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(leaseBucket).ForEach(func(k, v []byte) error {
			var rec leaseRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("corrupt lease record for %q: %w", k, err)
			}
			if s.deadline(string(k), rec, now).After(now) || s.delayLeft(string(k), rec, now) > 0 {
				c.Total++
				c.ByOwner[rec.Owner]++
			}
			return nil
		})
	})
	if err != nil {
		return tokens.LiveCount{}, &tokens.UnavailableError{Op: "count leases", Err: err}
	}
	return c, nil
}
