package gateway

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/fencegw/fencegw/tokens"
)

// ObserveStore wraps s so that the duration of every call is recorded in
// fencegw.store.duration by operation and outcome (ok, refused, error).
func (o *Observer) ObserveStore(s tokens.Store) tokens.Store {
	return &observedStore{Store: s, o: o}
}

type observedStore struct {
	tokens.Store
	o *Observer
}

func (s *observedStore) record(ctx context.Context, op string, start time.Time, err error) {
	outcome := "ok"
	var (
		stale     *tokens.StaleEpochError
		notIssued *tokens.EpochNotIssuedError
		held      *tokens.LeaseHeldError
		lost      *tokens.LeaseLostError
	)
	switch {
	case err == nil:
	case errors.As(err, &stale), errors.As(err, &notIssued), errors.As(err, &held), errors.As(err, &lost),
		errors.Is(err, tokens.ErrLeaseNotFound):
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

func (s *observedStore) Ping(ctx context.Context) error {
	start := time.Now()
	err := s.Store.Ping(ctx)
	s.record(ctx, "ping", start, err)
	return err
}

func (s *observedStore) Acquire(ctx context.Context, name, holder string, ttl time.Duration) (tokens.Grant, error) {
	start := time.Now()
	g, err := s.Store.Acquire(ctx, name, holder, ttl)
	s.record(ctx, "acquire", start, err)
	return g, err
}

func (s *observedStore) Renew(ctx context.Context, name, holder string, epoch int64) (tokens.Lease, error) {
	start := time.Now()
	l, err := s.Store.Renew(ctx, name, holder, epoch)
	s.record(ctx, "renew", start, err)
	return l, err
}

func (s *observedStore) Release(ctx context.Context, name, holder string, epoch int64) error {
	start := time.Now()
	err := s.Store.Release(ctx, name, holder, epoch)
	s.record(ctx, "release", start, err)
	return err
}

func (s *observedStore) Lease(ctx context.Context, name string) (tokens.Lease, error) {
	start := time.Now()
	l, err := s.Store.Lease(ctx, name)
	s.record(ctx, "lease", start, err)
	return l, err
}
