package control

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/go-chi/chi/v5"

	"github.com/fencegw/fencegw/tokens"
)

// leaseErrorLine says how a lease operation's error is logged, if at all
// (an empty msg): refusals that no retry can cure, refused renewals and
// releases, and failures with their cause; a lease held by another holder
// is the caller's answer, not an operator's concern.
func leaseErrorLine(op string, err error, p *problem.Problem) (slog.Level, string, []slog.Attr) {
	var (
		owned     *tokens.LeaseOwnedError
		exhausted *tokens.EpochExhaustedError
		lost      *tokens.LeaseLostError
	)
	switch {
	case errors.As(err, &owned):
		return slog.LevelWarn, "lease " + op + " refused: owned by another key",
			[]slog.Attr{slog.String("owner", owned.Owner), slog.String("caller", owned.Caller)}
	case errors.As(err, &exhausted):
		return slog.LevelError, "lease " + op + " refused: epoch space exhausted", []slog.Attr{slog.Int64("epoch", exhausted.Epoch)}
	case errors.As(err, &lost):
		return slog.LevelInfo, "lease " + op + " refused", []slog.Attr{slog.String("holder", lost.Holder),
			slog.Int64("epoch", lost.Epoch), slog.String("reason", lost.Reason)}
	case problem.IsA[*tokens.LeaseQuotaError](err):
		q, _ := errors.AsType[*tokens.LeaseQuotaError](err)
		return slog.LevelWarn, "lease " + op + " refused: too many live leases", []slog.Attr{slog.String("caller", q.Caller),
			slog.String("scope", q.Scope), slog.Int("live", q.Live), slog.Int("max", q.Max)}
	case p.Cause != nil:
		return slog.LevelWarn, "lease " + op + " failed", []slog.Attr{slog.String("error", p.Cause.Error())}
	}
	return slog.LevelInfo, "", nil
}

// controlRoute names a control API request's route for the refusal log:
// the pattern it matched (POST /v1/leases/{name}/renew), or fallback.
func controlRoute(r *http.Request, fallback string) string {
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		return r.Method + " " + rc.RoutePattern()
	}
	return fallback
}
