package control

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
// by every replica. A replica reads it at most once per period (and after
// a release) and adds what it did itself: the acquires in flight, and the
// grants made since the read. A grant that committed just before a read is
// counted twice until the next one, never missed, so one replica never
// overshoots a cap, and N replicas overshoot it by at most (N-1) × the
// grants one replica makes in a period.
type leaseQuota struct {
	max    int            // the global cap; 0: none
	perKey map[string]int // API key name → its cap; absent: none
	period time.Duration
	now    func() time.Time // the clock (time.Now)

	mu       sync.Mutex
	readAt   time.Time        // when base was read; zero: never
	base     tokens.LiveCount // as read from the store
	since    tokens.LiveCount // grants this replica made since the read
	inflight tokens.LiveCount // acquires reserved and not yet settled
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

// reserve takes a slot for one more live lease owned by by.Name, or
// returns a *tokens.LeaseQuotaError when a cap has none left. isLive
// reports (reading the store) whether lease name is live already, in which
// case the acquire cannot add one and is left to the store to decide: it
// is asked only when a cap is full. Every nil return must be settled.
func (q *leaseQuota) reserve(ctx context.Context, store tokens.LeaseCounter, name string, by tokens.Caller,
	isLive func(context.Context) (bool, error)) error {
	over, err := q.take(ctx, store, name, by, false)
	if err != nil || over == nil {
		return err
	}
	live, err := isLive(ctx)
	if err != nil {
		return err
	}
	if !live {
		return over
	}
	_, err = q.take(ctx, store, name, by, true)
	return err
}

// take reserves a slot if every cap has one (or force) and returns nil, or
// returns the refusal of the first full cap without reserving.
func (q *leaseQuota) take(ctx context.Context, store tokens.LeaseCounter, name string, by tokens.Caller, force bool) (*tokens.LeaseQuotaError, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if now := q.now(); q.readAt.IsZero() || now.Sub(q.readAt) >= q.period {
		c, err := store.LiveLeases(ctx)
		if err != nil {
			return nil, &tokens.UnavailableError{Op: "count leases", Resource: name, Err: err}
		}
		q.base, q.since, q.readAt = c, tokens.LiveCount{}, now
	}
	total := q.base.Total + q.since.Total + q.inflight.Total
	mine := q.base.ByOwner[by.Name] + q.since.ByOwner[by.Name] + q.inflight.ByOwner[by.Name]
	switch keyMax := q.perKey[by.Name]; {
	case force:
	case keyMax > 0 && mine >= keyMax:
		return &tokens.LeaseQuotaError{Name: name, Caller: by.Name, Scope: "key", Live: mine, Max: keyMax, RetryAfter: q.period}, nil
	case q.max > 0 && total >= q.max:
		return &tokens.LeaseQuotaError{Name: name, Scope: "global", Live: total, Max: q.max, RetryAfter: q.period}, nil
	}
	add(&q.inflight, by.Name, 1)
	return nil, nil
}

// settle ends owner's reservation: added reports that its acquire made a
// lease live that was not.
func (q *leaseQuota) settle(owner string, added bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	add(&q.inflight, owner, -1)
	if added {
		add(&q.since, owner, 1)
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

// add changes c's counts of owner's live leases by n.
func add(c *tokens.LiveCount, owner string, n int) {
	if c.ByOwner == nil {
		c.ByOwner = map[string]int{}
	}
	c.Total += n
	c.ByOwner[owner] += n
}

// reserveLease reserves a slot for the acquire of name by by (see
// leaseQuota.reserve); without a quota it reserves nothing. A nil error
// must be followed by settleLease.
func (c *control) reserveLease(ctx context.Context, name string, by tokens.Caller) error {
	if c.quota == nil {
		return nil
	}
	return c.quota.reserve(ctx, c.Fence.Store(), name, by, func(ctx context.Context) (bool, error) {
		l, err := c.Fence.Store().Lease(ctx, name)
		if errors.Is(err, tokens.ErrLeaseNotFound) {
			return false, nil
		}
		return l.Held, err
	})
}

// settleLease settles the reservation of an acquire by by that returned g
// and err: it added a live lease unless it failed or re-granted one that
// was live.
func (c *control) settleLease(by tokens.Caller, g tokens.Grant, err error) {
	if c.quota != nil {
		c.quota.settle(by.Name, err == nil && (g.Previous == nil || !g.Previous.Held))
	}
}
