package observe

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/fencegw/fencegw/tokens"
)

// ObserveStore wraps s so that the duration of every call is recorded in
// fencegw.store.duration by operation and outcome: ok, refused (the store's
// verdict: a stale or unissued epoch, a held, lost or owned lease, an
// exhausted epoch space, a lease not found) or error.
func (o *Observer) ObserveStore(s tokens.Store) tokens.Store {
	return &observedStore{Store: s, o: o}
}

type observedStore struct {
	tokens.Store
	o *Observer
}

func (s *observedStore) record(ctx context.Context, op string, start time.Time, err error) {
	outcome := "ok"
	switch {
	case err == nil:
	case tokens.IsVerdict(err):
		outcome = "refused"
	default:
		outcome = "error"
	}
	s.o.storeDuration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(
		attribute.String("operation", op), attribute.String("outcome", outcome)))
}

func (s *observedStore) Current(ctx context.Context, resource string) (int64, error) {
	start := time.Now()
	h, err := s.Store.Current(ctx, resource)
	s.record(ctx, "current", start, err)
	return h, err
}

func (s *observedStore) Advance(ctx context.Context, resource string, epoch int64) (int64, error) {
	start := time.Now()
	h, err := s.Store.Advance(ctx, resource, epoch)
	s.record(ctx, "advance", start, err)
	return h, err
}

func (s *observedStore) Mark(ctx context.Context, resource string) (tokens.Mark, error) {
	start := time.Now()
	m, err := s.Store.Mark(ctx, resource)
	s.record(ctx, "mark", start, err)
	return m, err
}

func (s *observedStore) Ping(ctx context.Context) error {
	start := time.Now()
	err := s.Store.Ping(ctx)
	s.record(ctx, "ping", start, err)
	return err
}

func (s *observedStore) Acquire(ctx context.Context, name, holder string, t tokens.Terms, by tokens.Caller) (tokens.Grant, error) {
	start := time.Now()
	g, err := s.Store.Acquire(ctx, name, holder, t, by)
	s.record(ctx, "acquire", start, err)
	return g, err
}

func (s *observedStore) Renew(ctx context.Context, name, holder string, epoch int64, by tokens.Caller) (tokens.Lease, error) {
	start := time.Now()
	l, err := s.Store.Renew(ctx, name, holder, epoch, by)
	s.record(ctx, "renew", start, err)
	return l, err
}

func (s *observedStore) Release(ctx context.Context, name, holder string, epoch int64, by tokens.Caller) error {
	start := time.Now()
	err := s.Store.Release(ctx, name, holder, epoch, by)
	s.record(ctx, "release", start, err)
	return err
}

func (s *observedStore) Lease(ctx context.Context, name string) (tokens.Lease, error) {
	start := time.Now()
	l, err := s.Store.Lease(ctx, name)
	s.record(ctx, "lease", start, err)
	return l, err
}

// WatchLease records the opening of a store watch ("watch"); the changes
// it then streams are no calls.
func (s *observedStore) WatchLease(ctx context.Context, name string, after int64) (<-chan tokens.LeaseChange, error) {
	start := time.Now()
	ch, err := s.Store.WatchLease(ctx, name, after)
	s.record(ctx, "watch", start, err)
	return ch, err
}

// MinLeaseTTL passes on the wrapped store's (tokens.TTLLimiter).
func (s *observedStore) MinLeaseTTL() time.Duration {
	lo, _ := tokens.LeaseTTLRange(s.Store)
	return lo
}

// LeaseTTLStep passes on the wrapped store's (tokens.TTLLimiter).
func (s *observedStore) LeaseTTLStep() time.Duration {
	_, step := tokens.LeaseTTLRange(s.Store)
	return step
}
