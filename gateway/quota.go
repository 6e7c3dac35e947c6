package gateway

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// DefaultQuotaPeriod is how long a replica reuses the store's count of
// live leases before it reads it again.
const DefaultQuotaPeriod = time.Second

// leaseQuota caps the live leases (held, or in their lock-delay) per API
// key (APIKey.MaxLeases) and in the whole store (max). It costs nothing on
// the data plane: it runs on a lease acquire only.
//
// The count comes from the store (tokens.LeaseCounter), so it is shared
// by every replica; a replica reads it at most once per period and adds
// the grants it made itself since, reserving a slot before each acquire.
// So one replica never overshoots a cap, and N replicas overshoot it by at
// most (N-1) × the grants one replica makes in a period.
type leaseQuota struct {
	max    int            // the global cap; 0: none
	perKey map[string]int // API key name → its cap; absent: none
	period time.Duration

	mu     sync.Mutex
	readAt time.Time        // when count was read; zero: never
	gen    uint64           // counts the reads of count
	count  tokens.LiveCount // as read, plus the grants reserved since
	now    func() time.Time // the clock (time.Now)
}

// newLeaseQuota returns the quota of max live leases overall and each
// key's MaxLeases; nil when there is no cap at all.
func newLeaseQuota(max int, keys APIKeys, period time.Duration) *leaseQuota {
	q := &leaseQuota{max: max, perKey: map[string]int{}, period: period, now: time.Now}
	for _, k := range keys {
		if k.MaxLeases > 0 {
			q.perKey[k.Name] = k.MaxLeases
		}
	}
	if q.max <= 0 && len(q.perKey) == 0 {
		return nil
	}
	if q.period <= 0 {
		q.period = DefaultQuotaPeriod
	}
	return q
}

// reserve takes a slot for one more live lease owned by by.Name, and
// returns the reservation, or a *tokens.LeaseQuotaError when a cap has
// none left. isLive reports (reading the store) whether lease name is live
// already, in which case the acquire cannot add one and is left to the
// store to decide: it is only asked when a cap is full. A reservation that
// did not add a live lease is given back with unreserve.
func (q *leaseQuota) reserve(ctx context.Context, store tokens.LeaseCounter, name string, by tokens.Caller,
	isLive func(context.Context) (bool, error)) (uint64, error) {
	gen, over, err := q.take(ctx, store, name, by)
	if err != nil || over == nil {
		return gen, err
	}
	live, err := isLive(ctx)
	if err != nil {
		return 0, err
	}
	if !live {
		return 0, over
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.add(by.Name, 1)
	return q.gen, nil
}

// take reserves a slot if every cap has one and returns the count's
// generation, or returns the refusal of the first full cap without
// reserving.
func (q *leaseQuota) take(ctx context.Context, store tokens.LeaseCounter, name string, by tokens.Caller) (uint64, *tokens.LeaseQuotaError, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if now := q.now(); q.readAt.IsZero() || now.Sub(q.readAt) >= q.period {
		c, err := store.LiveLeases(ctx)
		if err != nil {
			return 0, nil, &tokens.UnavailableError{Op: "count leases", Resource: name, Err: err}
		}
		q.count, q.readAt = c, now
		q.gen++
	}
	keyMax := q.perKey[by.Name]
	retry := q.period
	switch {
	case keyMax > 0 && q.count.ByOwner[by.Name] >= keyMax:
		return 0, &tokens.LeaseQuotaError{Name: name, Caller: by.Name, Scope: "key", Live: q.count.ByOwner[by.Name], Max: keyMax, RetryAfter: retry}, nil
	case q.max > 0 && q.count.Total >= q.max:
		return 0, &tokens.LeaseQuotaError{Name: name, Scope: "global", Live: q.count.Total, Max: q.max, RetryAfter: retry}, nil
	}
	q.add(by.Name, 1)
	return q.gen, nil, nil
}

// unreserve gives back a slot reserved for owner at generation gen: its
// acquire failed, or re-granted a lease that was live already. A count
// read since the reservation already saw the outcome, and is left alone.
func (q *leaseQuota) unreserve(owner string, gen uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if gen == q.gen {
		q.add(owner, -1)
	}
}

// add changes the counts of owner's live leases by n. The caller holds mu.
func (q *leaseQuota) add(owner string, n int) {
	if q.count.ByOwner == nil {
		q.count.ByOwner = map[string]int{}
	}
	q.count.Total += n
	q.count.ByOwner[owner] += n
}

// reserveLease reserves a slot for the acquire of name by by (see
// leaseQuota.reserve); without a quota it reserves nothing.
func (c *control) reserveLease(ctx context.Context, name string, by tokens.Caller) (uint64, error) {
	if c.quota == nil {
		return 0, nil
	}
	return c.quota.reserve(ctx, c.Fence.Store(), name, by, func(ctx context.Context) (bool, error) {
		l, err := c.Fence.Store().Lease(ctx, name)
		if errors.Is(err, tokens.ErrLeaseNotFound) {
			return false, nil
		}
		return l.Held, err
	})
}

// settleLease gives back the slot reserved at gen unless the acquire
// (grant g, error err) made a lease live that was not.
func (c *control) settleLease(by tokens.Caller, gen uint64, g tokens.Grant, err error) {
	if c.quota == nil {
		return
	}
	if err != nil || g.Previous != nil && g.Previous.Held {
		c.quota.unreserve(by.Name, gen)
	}
}

// forget drops the count, so the next acquire reads it from the store: a
// release may have freed a slot. A nil quota forgets nothing.
func (q *leaseQuota) forget() {
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.readAt = time.Time{}
}
