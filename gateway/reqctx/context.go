package reqctx

import (
	"context"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

type ctxKey int

const (
	exchangeKey ctxKey = iota
)

// Admission records an admitted fenced request.
type Admission = tokens.Admission

// Exchange is what the proxy's middleware learn of one request, kept in its
// context once (by MatchRoute) and filled in as the request goes on, so
// each step does not copy the request to add a value. Only the request's
// own handler goroutine writes it (the proxy calls its transport there).
type Exchange struct {
	Route     *policy.Route
	Admission Admission
	Admitted  bool
	// Body is the request's whole body when smallBodies read it.
	Body []byte
	// Forwarding is set when the proxy hands the request to a transport:
	// from then on some of it may have reached the upstream.
	Forwarding bool
	// Answered is set when the upstream's answer head came back.
	Answered bool
}

// RouteFrom returns the route the request matched, if any.
func RouteFrom(ctx context.Context) (*policy.Route, bool) {
	ex, ok := ctx.Value(exchangeKey).(*Exchange)
	if !ok {
		return nil, false
	}
	return ex.Route, true
}

// AdmissionFrom returns the request's admission, if it was fenced and admitted.
func AdmissionFrom(ctx context.Context) (Admission, bool) {
	ex, ok := ctx.Value(exchangeKey).(*Exchange)
	if !ok || !ex.Admitted {
		return Admission{}, false
	}
	return ex.Admission, true
}

// WithRoute starts the exchange of a request that matched r.
func WithRoute(ctx context.Context, r *policy.Route) context.Context {
	return context.WithValue(ctx, exchangeKey, &Exchange{Route: r})
}

// ExchangeFrom returns ctx's exchange, if MatchRoute started one.
func ExchangeFrom(ctx context.Context) (*Exchange, bool) {
	ex, ok := ctx.Value(exchangeKey).(*Exchange)
	return ex, ok
}

// Admit records a's admission in ctx's exchange, which MatchRoute started.
func Admit(ctx context.Context, a Admission) {
	if ex, ok := ctx.Value(exchangeKey).(*Exchange); ok {
		ex.Admission, ex.Admitted = a, true
	}
}
