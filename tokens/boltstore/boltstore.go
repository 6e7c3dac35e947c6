// Package boltstore is the embedded tokens.Store: the high-water marks live
// in one local bbolt file, synced to disk on every change. It needs no
// service and is the default store. The file is locked while open, so one
// process at a time owns it; the store is therefore Exclusive, and a Fence
// over it admits writes at the current epoch from memory.
package boltstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fencegw/fencegw/tokens"
)

// Buckets: the HWM of each resource, the highest epoch issued for it by a
// lease grant, and the lease records.
var (
	bucket       = []byte("hwm")
	issuedBucket = []byte("issued")
	leaseBucket  = []byte("lease")
)

// LockTimeout bounds how long Open waits for another process to release the
// file before it gives up.
const LockTimeout = 2 * time.Second

// Store is a tokens.Store over a bbolt file.
type Store struct {
	db        *bolt.DB
	closeOnce sync.Once
	closeErr  error

	// now is the process's clock; its monotonic reading decides lease
	// deadlines.
	now func() time.Time
	// clock is the wall clock of the expiries on disk and reported (the
	// system clock when nil); see OpenClock.
	clock tokens.Clock
	// reclaimFrom is the lease record where the last reclaim scan
	// stopped (under leaseMu); nil: the first.
	reclaimFrom []byte
	// commits groups HWM raises into shared transactions.
	commits *committer
	// leaseMu serializes lease changes with their in-memory deadlines.
	leaseMu   sync.Mutex
	deadlines map[string]time.Time // monotonic deadline of each lease touched since Open
	// notes tells lease watchers of changes.
	notes tokens.Notifications
	// changes keeps each lease's recent changes for WatchLease; staged is
	// the change of the transaction under way (both under leaseMu).
	changes map[string]*changeLog
	staged  *stagedChange
}

var _ tokens.Store = (*Store)(nil)

// Open opens the store file at path, or creates it when no file exists
// there (a caller that must not start a new store checks first). It
// fails if another process holds the file open for longer than
// LockTimeout. It never starts an existing file afresh and never panics on
// one: an empty file, or one whose pages fail bbolt's consistency check
// (run over the whole file at open), is a *FileError naming the file and
// how to restore it.
func Open(path string) (*Store, error) {
	if err := verify(path); err != nil {
		return nil, openError(path, err)
	}
	db, err := openDB(path, bolt.Options{Timeout: LockTimeout})
	if err != nil {
		return nil, openError(path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucket, issuedBucket, leaseBucket} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return buildAuditIndexes(tx)
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: create bucket: %w", path, err)
	}
	return &Store{db: db, now: time.Now, deadlines: make(map[string]time.Time), commits: &committer{db: db}}, nil
}

// Current returns the HWM of resource, or 0 if none was recorded.
func (s *Store) Current(ctx context.Context, resource string) (int64, error) {
	if err := begin(ctx, "current", resource, tokens.ValidateResource(resource)); err != nil {
		return 0, err
	}
	var hwm int64
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		hwm, err = get(tx, resource)
		return err
	})
	if err != nil {
		return 0, &tokens.UnavailableError{Op: "current", Resource: resource, Err: err}
	}
	return hwm, nil
}

// Advance raises the HWM of resource to epoch unless epoch is below it, or
// above the highest epoch issued when a lease of that name was ever
// granted. A raise is committed and synced to disk before Advance returns;
// raises that arrive together share one commit (group commit).
func (s *Store) Advance(ctx context.Context, resource string, epoch int64) (int64, error) {
	if err := begin(ctx, "advance", resource, tokens.ValidateAdvance(resource, epoch)); err != nil {
		return 0, err
	}
	// Most calls do not raise the HWM; answer them without a write.
	current, err := s.Current(ctx, resource)
	if err != nil {
		return 0, err
	}
	if epoch < current {
		return 0, &tokens.StaleEpochError{Resource: resource, Presented: epoch, Current: current}
	}
	if epoch == current {
		return epoch, nil
	}
	verdict, err := s.commits.advance(ctx, resource, epoch)
	if verdict != nil {
		return 0, verdict
	}
	if err != nil {
		return 0, &tokens.UnavailableError{Op: "advance", Resource: resource, Err: err}
	}
	return epoch, nil
}

// get reads resource's HWM in tx.
func get(tx *bolt.Tx, resource string) (int64, error) { return getFrom(tx, bucket, resource) }

// getFrom reads an epoch from bucket b in tx; 0 when absent. A value that is
// not 8 bytes encoding a positive int64 is corruption and an error, never 0.
func getFrom(tx *bolt.Tx, b []byte, resource string) (int64, error) {
	v := tx.Bucket(b).Get([]byte(resource))
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("corrupt HWM for %q: %d bytes", resource, len(v))
	}
	e := int64(binary.BigEndian.Uint64(v))
	if e <= 0 {
		return 0, fmt.Errorf("corrupt HWM for %q: %d", resource, e)
	}
	return e, nil
}

// put writes an epoch to bucket b in tx.
func put(tx *bolt.Tx, b []byte, resource string, epoch int64) error {
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], uint64(epoch))
	return tx.Bucket(b).Put([]byte(resource), v[:])
}

// Ping returns nil while the file is open.
func (s *Store) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return &tokens.UnavailableError{Op: "ping", Err: err}
	}
	if err := s.db.View(func(*bolt.Tx) error { return nil }); err != nil {
		return &tokens.UnavailableError{Op: "ping", Err: err}
	}
	return nil
}

// Exclusive reports true: the file lock makes this process its only writer.
func (s *Store) Exclusive() bool { return true }

// Close closes the file. Later calls return the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.db.Close() })
	return s.closeErr
}

// begin returns what stops operation op on resource before it starts:
// invalid (the caller's check of its arguments) when not nil, else ctx's
// end as a *tokens.UnavailableError.
func begin(ctx context.Context, op, resource string, invalid error) error {
	if invalid != nil {
		return invalid
	}
	if err := ctx.Err(); err != nil {
		return &tokens.UnavailableError{Op: op, Resource: resource, Err: err}
	}
	return nil
}
