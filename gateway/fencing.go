package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// Decision names the outcome of a fencing check, as logged.
type Decision string

// The decisions of the fencing middleware.
const (
	DecisionAdmitted    Decision = "admitted"
	DecisionStale       Decision = "stale"
	DecisionMissing     Decision = "missing"
	DecisionInvalid     Decision = "invalid"
	DecisionUnavailable Decision = "unavailable"
	DecisionForbidden   Decision = "forbidden"
	DecisionForged      Decision = "forged"
)

// Fencing is middleware that admits or refuses fenced requests. It needs the
// route recorded by MatchRoute. An admitted request reaches next with its
// Admission in the context; a refused one never does. Every decision is
// recorded on the request's span and counted; every refusal is logged and
// kept in the audit.
func Fencing(fence *tokens.Fence, obs *Observer, log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rt, ok := RouteFrom(r.Context())
			if !ok || !rt.Fenced(r.Method) {
				next.ServeHTTP(w, r)
				return
			}
			a, p := decide(r, rt, fence, obs)
			obs.recordDecision(r, rt, a, p)
			if p != nil {
				p.Route = rt.Name
				obs.audit(r, a, p)
				logRefusal(log, r, a, p)
				writeProblem(w, r, *p)
				return
			}
			next.ServeHTTP(w, r.WithContext(withAdmission(r.Context(), a)))
		})
	}
}

// decide checks one fenced request. It returns the admission, or the problem
// to answer with. The steps: a token must be present (428) and verify (400
// when malformed, 401 when not authentic); the resource is the route's, the
// token's, or the request's (400 when none, 403 when the token names another
// than the route); an epoch source, where the route names one, must agree
// (412 below, 403 above); then the fence decides (412 stale, 403 never
// issued, 503 unconfirmed).
func decide(r *http.Request, rt *policy.Route, fence *tokens.Fence, obs *Observer) (Admission, *Problem) {
	tok := r.Header.Values(TokenHeader)
	switch {
	case len(tok) == 0 || tok[0] == "":
		resource, _ := rt.ResolveResource(r)
		return Admission{}, &Problem{Type: TypeTokenRequired, Title: "Fencing token required", Status: http.StatusPreconditionRequired,
			Detail:   fmt.Sprintf("%s %s is fenced: send the epoch in the %s header", r.Method, rt.Prefix, TokenHeader),
			Resource: resource}
	case len(tok) > 1:
		return Admission{}, &Problem{Type: TypeMalformedToken, Title: "Malformed fencing token", Status: http.StatusBadRequest,
			Detail: fmt.Sprintf("%d %s headers, want one", len(tok), TokenHeader)}
	}
	claims, err := rt.Verifier.Verify(r.Context(), tok[0])
	switch {
	case errors.Is(err, tokens.ErrUnauthenticated):
		return Admission{}, &Problem{Type: TypeUnauthenticated, Title: "Fencing token not authentic", Status: http.StatusUnauthorized,
			Detail: err.Error()}
	case err != nil:
		return Admission{}, &Problem{Type: TypeMalformedToken, Title: "Malformed fencing token", Status: http.StatusBadRequest,
			Detail: err.Error()}
	}
	a := Admission{Epoch: claims.Epoch, Holder: claims.Holder}
	a.Resource, err = resolveResource(r, rt, claims)
	switch {
	case errors.Is(err, tokens.ErrWrongResource):
		return a, &Problem{Type: TypeWrongResource, Title: "Token issued for another resource", Status: http.StatusForbidden,
			Detail: err.Error(), Resource: a.Resource, PresentedEpoch: epochPtr(claims.Epoch)}
	case err != nil:
		return a, &Problem{Type: TypeBadResource, Title: "Resource cannot be determined", Status: http.StatusBadRequest,
			Detail: err.Error(), PresentedEpoch: epochPtr(claims.Epoch)}
	}
	ctx, span := obs.span(r.Context(), "fencing.check", AttrResource.String(a.Resource), AttrEpochPresented.Int64(a.Epoch))
	defer span.End()
	if rt.EpochSource != nil {
		if p := refusal(rt.EpochSource.Check(ctx, a.Resource, claims.Epoch), a); p != nil {
			p.Detail = "epoch source: " + p.Detail
			span.SetAttributes(AttrDecision.String(string(decisionOf(p))))
			return a, p
		}
	}
	p := refusal(fence.Admit(ctx, a.Resource, claims.Epoch), a)
	if p != nil {
		span.SetAttributes(AttrDecision.String(string(decisionOf(p))))
	} else {
		span.SetAttributes(AttrDecision.String(string(DecisionAdmitted)))
	}
	return a, p
}

// resolveResource names the resource a verified request writes to. A signed
// token names its resource; on a route that names one too, they must agree.
func resolveResource(r *http.Request, rt *policy.Route, claims tokens.Claims) (string, error) {
	if claims.Resource == "" {
		return rt.ResolveResource(r)
	}
	if err := tokens.ValidateResource(claims.Resource); err != nil {
		return "", fmt.Errorf("the token's resource: %w", err)
	}
	if rt.Resource == nil {
		return claims.Resource, nil
	}
	want, err := rt.ResolveResource(r)
	if err != nil {
		return "", err
	}
	if want != claims.Resource {
		return want, fmt.Errorf("%w: the token is for %q, this route writes to %q", tokens.ErrWrongResource, claims.Resource, want)
	}
	return want, nil
}

// refusal maps a fence or epoch source verdict to its problem; nil admits.
func refusal(err error, a Admission) *Problem {
	var (
		stale     *tokens.StaleEpochError
		notIssued *tokens.EpochNotIssuedError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &stale):
		detail := fmt.Sprintf("epoch %d is below the current epoch %d of %q", stale.Presented, stale.Current, a.Resource)
		if stale.Reason != "" {
			detail = fmt.Sprintf("epoch %d of %q no longer leads: %s", stale.Presented, a.Resource, stale.Reason)
		}
		return &Problem{Type: TypeStaleEpoch, Title: "Stale fencing epoch", Status: http.StatusPreconditionFailed,
			Detail:   detail,
			Resource: a.Resource, PresentedEpoch: epochPtr(stale.Presented), CurrentEpoch: epochPtr(stale.Current)}
	case errors.As(err, &notIssued):
		return &Problem{Type: TypeEpochNotIssued, Title: "Epoch was never issued", Status: http.StatusForbidden,
			Detail:   fmt.Sprintf("epoch %d is above the highest epoch issued for %q", notIssued.Presented, a.Resource),
			Resource: a.Resource, PresentedEpoch: epochPtr(notIssued.Presented), CurrentEpoch: epochPtr(notIssued.Issued)}
	case errors.Is(err, tokens.ErrInvalidEpoch):
		return &Problem{Type: TypeMalformedToken, Title: "Malformed fencing token", Status: http.StatusBadRequest,
			Detail: err.Error(), Resource: a.Resource}
	case errors.Is(err, tokens.ErrInvalidResource):
		return &Problem{Type: TypeBadResource, Title: "Resource cannot be determined", Status: http.StatusBadRequest,
			Detail: err.Error(), PresentedEpoch: epochPtr(a.Epoch)}
	default:
		// Only a failure to reach the store or source gets here: every
		// verdict is matched above.
		return &Problem{Type: TypeStoreUnavailable, Title: "Fencing store unavailable", Status: http.StatusServiceUnavailable,
			Detail:   "the epoch could not be confirmed; nothing was forwarded",
			Resource: a.Resource, PresentedEpoch: epochPtr(a.Epoch), retryAfter: 1, cause: err}
	}
}

func decisionOf(p *Problem) Decision {
	switch p.Status {
	case http.StatusPreconditionFailed:
		return DecisionStale
	case http.StatusPreconditionRequired:
		return DecisionMissing
	case http.StatusServiceUnavailable:
		return DecisionUnavailable
	case http.StatusUnauthorized:
		return DecisionForged
	case http.StatusForbidden:
		return DecisionForbidden
	default:
		return DecisionInvalid
	}
}

// logRefusal writes one line per refused write, whether or not its trace
// is sampled, with the request's context: a logger wrapped by
// telemetry.LogHandler adds its trace_id and span_id. It never logs the
// token.
func logRefusal(log *slog.Logger, r *http.Request, a Admission, p *Problem) {
	attrs := []slog.Attr{
		slog.String("decision", string(decisionOf(p))),
		slog.String("route", p.Route),
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int("status", p.Status),
	}
	if p.Resource != "" {
		attrs = append(attrs, slog.String("resource", p.Resource))
	}
	if p.PresentedEpoch != nil {
		attrs = append(attrs, slog.Int64("presented_epoch", *p.PresentedEpoch))
	}
	if p.CurrentEpoch != nil {
		attrs = append(attrs, slog.Int64("current_epoch", *p.CurrentEpoch))
	}
	if a.Holder != "" {
		attrs = append(attrs, slog.String("holder", a.Holder))
	}
	if p.cause != nil {
		attrs = append(attrs, slog.String("error", p.cause.Error()))
	}
	level := slog.LevelInfo
	if p.Status == http.StatusServiceUnavailable {
		level = slog.LevelWarn
	}
	log.LogAttrs(r.Context(), level, "fenced write refused", attrs...)
}
