package gateway

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

// exchange is what the proxy's middleware learn of one request, kept in its
// context once (by MatchRoute) and filled in as the request goes on, so
// each step does not copy the request to add a value. Only the request's
// own handler goroutine writes it (the proxy calls its transport there).
type exchange struct {
	route     *policy.Route
	admission Admission
	admitted  bool
	// body is the request's whole body when smallBodies read it.
	body []byte
	// forwarding is set when the proxy hands the request to a transport:
	// from then on some of it may have reached the upstream.
	forwarding bool
	// answered is set when the upstream's answer head came back.
	answered bool
}

// RouteFrom returns the route the request matched, if any.
func RouteFrom(ctx context.Context) (*policy.Route, bool) {
	ex, ok := ctx.Value(exchangeKey).(*exchange)
	if !ok {
		return nil, false
	}
	return ex.route, true
}

// AdmissionFrom returns the request's admission, if it was fenced and admitted.
func AdmissionFrom(ctx context.Context) (Admission, bool) {
	ex, ok := ctx.Value(exchangeKey).(*exchange)
	if !ok || !ex.admitted {
		return Admission{}, false
	}
	return ex.admission, true
}

// withRoute starts the exchange of a request that matched r.
func withRoute(ctx context.Context, r *policy.Route) context.Context {
	return context.WithValue(ctx, exchangeKey, &exchange{route: r})
}

// exchangeFrom returns ctx's exchange, if MatchRoute started one.
func exchangeFrom(ctx context.Context) (*exchange, bool) {
	ex, ok := ctx.Value(exchangeKey).(*exchange)
	return ex, ok
}

// admit records a's admission in ctx's exchange, which MatchRoute started.
func admit(ctx context.Context, a Admission) {
	if ex, ok := ctx.Value(exchangeKey).(*exchange); ok {
		ex.admission, ex.admitted = a, true
	}
}
