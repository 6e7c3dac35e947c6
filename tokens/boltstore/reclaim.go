package boltstore

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fencegw/fencegw/tokens"
)

// ReclaimLeases deletes the records of at most limit leases that ended at
// least retention ago; see tokens.LeaseReclaimer. The HWM and issued
// buckets are untouched. Each call scans on from where the last one
// stopped, so a batch costs about limit records, not the whole bucket.
func (s *Store) ReclaimLeases(ctx context.Context, retention time.Duration, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, &tokens.UnavailableError{Op: "reclaim leases", Err: err}
	}
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	now := s.now()
	var gone []string
	err := s.db.Update(func(tx *bolt.Tx) error {
		gone = s.reclaimable(tx, now, retention, limit)
		for _, name := range gone {
			if err := tx.Bucket(leaseBucket).Delete([]byte(name)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, &tokens.UnavailableError{Op: "reclaim leases", Err: err}
	}
	for _, name := range gone {
		delete(s.deadlines, name)
		delete(s.changes, name)
	}
	return len(gone), nil
}

// reclaimable returns at most limit names of records that ended at least
// retention before now, scanning at most 4 × limit records from where the
// last scan stopped, round the bucket once. The caller holds leaseMu.
func (s *Store) reclaimable(tx *bolt.Tx, now time.Time, retention time.Duration, limit int) []string {
	var gone []string
	start := s.reclaimFrom
	c := tx.Bucket(leaseBucket).Cursor()
	k, v := c.Seek(start)
	wrapped := start == nil
	for scanned := 0; len(gone) < limit && scanned < 4*limit; scanned++ {
		if k == nil {
			if wrapped {
				break
			}
			wrapped = true
			if k, v = c.First(); k == nil {
				break
			}
		}
		if wrapped && start != nil && bytes.Compare(k, start) >= 0 {
			break // round the bucket once
		}
		s.reclaimFrom = append([]byte(nil), k...)
		var rec leaseRecord
		if err := json.Unmarshal(v, &rec); err == nil && rec.TTLMillis > 0 && s.endedBefore(string(k), rec, now, retention) {
			gone = append(gone, string(k))
		}
		k, v = c.Next()
	}
	return gone
}

// endedBefore reports whether rec's grant ended, lock-delay included, at
// least retention before now. Whether it ended is decided on the monotonic
// deadline (so a lock-delay is never cut short); when, on the wall-clock
// expiry the file keeps (a release sets it), so a restart does not start
// the retention over. The caller holds leaseMu.
func (s *Store) endedBefore(name string, rec leaseRecord, now time.Time, retention time.Duration) bool {
	if s.deadline(name, rec, now).After(now) || s.delayLeft(name, rec, now) > 0 {
		return false // live, or in its lock-delay
	}
	end := time.Unix(0, rec.ExpiresUnix)
	if !rec.Released {
		end = end.Add(rec.lockDelay())
	}
	return !end.After(s.wall().Add(-retention))
}
