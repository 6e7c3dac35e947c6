package faults

import "time"

// ttlLock is the part of a leader whose term is a lock the source expires
// by itself (a Redis key's PX, a leader_lease row's expires_at): when the
// lock surely expired, and a lapse that waits for it.
type ttlLock struct {
	ttl time.Duration
	// set is when the last command that set the lock's expiry returned;
	// unsure: a renewal's outcome is unknown (it may be applied later,
	// and extend the lock beyond set + ttl).
	set    time.Time
	unsure bool
}

// expiryMargin covers the source's clock resolution: a lock whose expiry
// was set to ttl by a command that returned at t is gone by t + ttl +
// expiryMargin (the server read its clock before it answered).
const expiryMargin = 20 * time.Millisecond

// expiry is when the lock surely expired; zero when a renewal's outcome
// is unknown.
func (l *ttlLock) expiry() time.Time {
	if l.unsure {
		return time.Time{}
	}
	return l.set.Add(l.ttl + expiryMargin)
}

// lapse stops renewing until the lock expired, and returns when (zero
// when unknown, after waiting a ttl).
func (l *ttlLock) lapse() time.Time {
	gone := l.expiry()
	if gone.IsZero() {
		time.Sleep(l.ttl + expiryMargin)
		return gone
	}
	time.Sleep(time.Until(gone))
	return gone
}
