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
)

// Fencing is middleware that admits or refuses fenced requests. It needs the
// route recorded by MatchRoute. An admitted request reaches next with its
// Admission in the context; a refused one never does.
func Fencing(fence *tokens.Fence, log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rt, ok := RouteFrom(r.Context())
			if !ok || !rt.Fenced(r.Method) {
				next.ServeHTTP(w, r)
				return
			}
			a, p := decide(r, rt, fence)
			if p != nil {
				p.Route = rt.Name
				logRefusal(log, r, p)
				writeProblem(w, *p)
				return
			}
			next.ServeHTTP(w, r.WithContext(withAdmission(r.Context(), a)))
		})
	}
}

// decide checks one fenced request. It returns the admission, or the problem
// to answer with.
func decide(r *http.Request, rt *policy.Route, fence *tokens.Fence) (Admission, *Problem) {
	resource, resErr := rt.ResolveResource(r)
	tok := r.Header.Values(TokenHeader)
	switch {
	case len(tok) == 0 || tok[0] == "":
		return Admission{}, &Problem{Type: TypeTokenRequired, Title: "Fencing token required", Status: http.StatusPreconditionRequired,
			Detail:   fmt.Sprintf("%s %s is fenced: send the epoch in the %s header", r.Method, rt.Prefix, TokenHeader),
			Resource: resource}
	case len(tok) > 1:
		return Admission{}, &Problem{Type: TypeMalformedToken, Title: "Malformed fencing token", Status: http.StatusBadRequest,
			Detail: fmt.Sprintf("%d %s headers, want one", len(tok), TokenHeader), Resource: resource}
	}
	claims, err := rt.Verifier.Verify(r.Context(), tok[0])
	if err != nil {
		return Admission{}, &Problem{Type: TypeMalformedToken, Title: "Malformed fencing token", Status: http.StatusBadRequest,
			Detail: err.Error(), Resource: resource}
	}
	if resErr != nil {
		return Admission{}, &Problem{Type: TypeBadResource, Title: "Resource cannot be determined", Status: http.StatusBadRequest,
			Detail: resErr.Error(), PresentedEpoch: epochPtr(claims.Epoch)}
	}
	err = fence.Admit(r.Context(), resource, claims.Epoch)
	var stale *tokens.StaleEpochError
	switch {
	case err == nil:
		return Admission{Resource: resource, Epoch: claims.Epoch, Holder: claims.Holder}, nil
	case errors.As(err, &stale):
		return Admission{}, &Problem{Type: TypeStaleEpoch, Title: "Stale fencing epoch", Status: http.StatusPreconditionFailed,
			Detail:   fmt.Sprintf("epoch %d is below the current epoch %d of %q", stale.Presented, stale.Current, resource),
			Resource: resource, PresentedEpoch: epochPtr(stale.Presented), CurrentEpoch: epochPtr(stale.Current)}
	case errors.Is(err, tokens.ErrInvalidEpoch):
		return Admission{}, &Problem{Type: TypeMalformedToken, Title: "Malformed fencing token", Status: http.StatusBadRequest,
			Detail: err.Error(), Resource: resource}
	default:
		return Admission{}, &Problem{Type: TypeStoreUnavailable, Title: "Fencing store unavailable", Status: http.StatusServiceUnavailable,
			Detail:   "the store could not confirm this epoch; nothing was forwarded",
			Resource: resource, PresentedEpoch: epochPtr(claims.Epoch), retryAfter: 1}
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
	default:
		return DecisionInvalid
	}
}

// logRefusal writes one line per refused write. It never logs the token.
func logRefusal(log *slog.Logger, r *http.Request, p *Problem) {
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
	level := slog.LevelInfo
	if p.Status == http.StatusServiceUnavailable {
		level = slog.LevelWarn
	}
	log.LogAttrs(r.Context(), level, "fenced write refused", attrs...)
}
