package boltstore

import (
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// OpenClock is Open with the wall clock the store reads (see tokens.Clock).
// The wall clock only stamps what outlives the process or leaves it: a
// lease's expiry on disk, read back for a lease not touched since Open (and
// then capped at one TTL from now), and the ExpiresAt it reports. While the
// process runs, a lease's life and its lock-delay run on its monotonic
// clock, which no wall-clock jump moves.
func OpenClock(path string, clock tokens.Clock) (*Store, error) {
	s, err := Open(path)
	if err != nil {
		return nil, err
	}
	s.clock = clock
	return s, nil
}

// wall is the current time on the Store's wall clock.
func (s *Store) wall() time.Time { return tokens.ClockOr(s.clock).Now() }
