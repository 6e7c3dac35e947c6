package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
)

// StatusClientClosedRequest is logged when the client went away before the
// upstream answered (nginx's 499); nobody receives it.
const StatusClientClosedRequest = 499

// proxyErrorHandler answers an exchange the reverse proxy could not
// complete, and logs it with the request's context (its trace) and route:
// a client that went away and an upstream that failed through refusals,
// so that an upstream outage is a few lines a second.
func proxyErrorHandler(log *slog.Logger, obs *Observer, refusals *RefusalLog) func(http.ResponseWriter, *http.Request, error) {
	return func(w http.ResponseWriter, r *http.Request, err error) {
		rt, _ := RouteFrom(r.Context())
		if fe := bodyViolation(r.Context()); fe != nil {
			// The body broke framing after its head was forwarded: the
			// upstream's connection was cut before the request was whole.
			log.LogAttrs(r.Context(), slog.LevelWarn, "request framing violated mid-body", slog.String("route", rt.Name), slog.String("remote", r.RemoteAddr),
				slog.Int("status", fe.Status), slog.String("error", fe.Detail))
			writeFramingProblem(w, r, fe)
			return
		}
		if a, ok := AdmissionFrom(r.Context()); ok && errors.Is(err, errDeliveryCut) {
			log.LogAttrs(r.Context(), slog.LevelWarn, "write cut: its lease ran out before it was delivered whole",
				slog.String("route", rt.Name), slog.String("resource", a.Resource), slog.Int64("epoch", a.Epoch),
				slog.String("error", err.Error()))
			writeLapsed(w, r, a, !errors.Is(err, errNothingSent), obs)
			return
		}
		if errors.Is(err, context.Canceled) && errors.Is(r.Context().Err(), context.Canceled) {
			if refusals.allow(rt.Name, "client-closed", StatusClientClosedRequest) {
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
		case isTimeout(err):
			err = refuseCause(KindUpstreamSlow, "the upstream did not answer in time; the write may or may not have taken effect", err)
		default:
			err = refuseCause(KindUpstream, "the upstream could not be reached or broke the connection", err)
		}
		p := problemOf(err)
		p.Route = rt.Name
		if a, ok := AdmissionFrom(r.Context()); ok {
			p.Resource, p.PresentedEpoch = a.Resource, epochPtr(a.Epoch)
		}
		if refusals.allow(rt.Name, problemDecision(&p), p.Status) {
			log.LogAttrs(r.Context(), slog.LevelWarn, "upstream failed", slog.String("route", rt.Name),
				slog.Int("status", p.Status), slog.String("error", cause.Error()))
		}
		writeProblem(w, r, p)
	}
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
