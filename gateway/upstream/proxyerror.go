package upstream

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"

	"github.com/fencegw/fencegw/gateway/guard"
	"github.com/fencegw/fencegw/gateway/observe"
	"github.com/fencegw/fencegw/gateway/problem"
	"github.com/fencegw/fencegw/gateway/reqctx"
)

// StatusClientClosedRequest is logged when the client went away before the
// upstream answered (nginx's 499); nobody receives it.
const StatusClientClosedRequest = 499

// ErrorHandler answers an exchange the reverse proxy could not
// complete, and logs it with the request's context (its trace) and route:
// a client that went away and an upstream that failed through refusals,
// so that an upstream outage is a few lines a second.
func ErrorHandler(log *slog.Logger, obs *observe.Observer, refusals *observe.RefusalLog) func(http.ResponseWriter, *http.Request, error) {
	return func(w http.ResponseWriter, r *http.Request, err error) {
		rt, _ := reqctx.RouteFrom(r.Context())
		if fe := guard.BodyViolation(r.Context()); fe != nil {
			// The body broke framing after its head was forwarded: the
			// upstream's connection was cut before the request was whole.
			log.LogAttrs(r.Context(), slog.LevelWarn, "request framing violated mid-body", slog.String("route", rt.Name), slog.String("remote", r.RemoteAddr),
				slog.Int("status", fe.Status), slog.String("error", fe.Detail))
			guard.WriteFramingProblem(w, r, fe)
			return
		}
		if a, ok := reqctx.AdmissionFrom(r.Context()); ok && errors.Is(err, errDeliveryCut) && !errors.Is(err, errDeliveryUncertain) {
			log.LogAttrs(r.Context(), slog.LevelWarn, "write cut: its lease ran out before it was delivered whole",
				slog.String("route", rt.Name), slog.String("resource", a.Resource), slog.Int64("epoch", a.Epoch),
				slog.String("error", err.Error()))
			writeLapsed(w, r, a, !errors.Is(err, ErrNothingSent), obs)
			return
		}
		if errors.Is(err, context.Canceled) && errors.Is(r.Context().Err(), context.Canceled) {
			if refusals.Allow(rt.Name, "client-closed", StatusClientClosedRequest) {
				log.LogAttrs(r.Context(), slog.LevelInfo, "client went away", slog.String("route", rt.Name),
					slog.Int("status", StatusClientClosedRequest))
			}
			w.WriteHeader(StatusClientClosedRequest)
			return
		}
		cause := err
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
		case errors.Is(err, errDeliveryUncertain):
			err = problem.RefuseCause(problem.KindUpstream, "the lease ran out while the write's last bytes were in flight: "+
				"the upstream connection was reset, and the upstream may or may not have received all of it", err)
		case isTimeout(err):
			err = problem.RefuseCause(problem.KindUpstreamSlow, "the upstream did not answer in time; the write may or may not have taken effect", err)
		default:
			err = problem.RefuseCause(problem.KindUpstream, "the upstream could not be reached or broke the connection", err)
		}
		p := problem.Of(err)
		p.Route = rt.Name
		if a, ok := reqctx.AdmissionFrom(r.Context()); ok {
			p.Resource, p.PresentedEpoch = a.Resource, problem.EpochPtr(a.Epoch)
		}
		if refusals.Allow(rt.Name, observe.ProblemDecision(&p), p.Status) {
			log.LogAttrs(r.Context(), slog.LevelWarn, "upstream failed", slog.String("route", rt.Name),
				slog.Int("status", p.Status), slog.String("error", cause.Error()))
		}
		problem.Write(w, r, p)
	}
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
