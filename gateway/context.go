package gateway

import (
	"context"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

type ctxKey int

const (
	routeKey ctxKey = iota
	admissionKey
	apiKeyKey
)

// Admission records an admitted fenced request.
type Admission = tokens.Admission

// RouteFrom returns the route the request matched, if any.
func RouteFrom(ctx context.Context) (*policy.Route, bool) {
	r, ok := ctx.Value(routeKey).(*policy.Route)
	return r, ok
}

// AdmissionFrom returns the request's admission, if it was fenced and admitted.
func AdmissionFrom(ctx context.Context) (Admission, bool) {
	a, ok := ctx.Value(admissionKey).(Admission)
	return a, ok
}

func withRoute(ctx context.Context, r *policy.Route) context.Context {
	return context.WithValue(ctx, routeKey, r)
}

func withAdmission(ctx context.Context, a Admission) context.Context {
	return context.WithValue(ctx, admissionKey, a)
}

// APIKeyFrom returns the control API key the request was authenticated
// with; none when the control API has no keys.
func APIKeyFrom(ctx context.Context) (*APIKey, bool) {
	k, ok := ctx.Value(apiKeyKey).(*APIKey)
	return k, ok
}

func withAPIKey(ctx context.Context, k *APIKey) context.Context {
	return context.WithValue(ctx, apiKeyKey, k)
}
