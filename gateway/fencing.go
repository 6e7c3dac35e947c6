package gateway

import (
	"log/slog"
	"net/http"

	"github.com/fencegw/fencegw/gateway/observe"
	"github.com/fencegw/fencegw/gateway/problem"
	"github.com/fencegw/fencegw/gateway/reqctx"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// Fencing is middleware that admits or refuses fenced requests. It needs the
// route recorded by MatchRoute. It extracts what the request presents and
// leaves the decision to the domain (tokens.Fence.Decide). An admitted
// request reaches next with its Admission in the context; a refused one
// never does. Every decision is recorded on the request's span and
// counted and kept in the audit; refusals are logged through refusals,
// which keeps a storm to a few lines a second with their counts (a nil
// one logs every refusal to slog.Default()). The answer to a raw epoch on
// a route that takes raw epochs tells no epoch (see rawAnswer); a raw
// epoch for a resource the gateway leases is refused naming a signed
// route of routes to use.
func Fencing(fence *tokens.Fence, routes *Routes, obs *observe.Observer, refusals *observe.RefusalLog) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rt, ok := reqctx.RouteFrom(r.Context())
			if !ok || !rt.Fenced(r.Method) {
				next.ServeHTTP(w, r)
				return
			}
			a, err := decide(r, rt, fence, obs)
			if err == nil {
				obs.RecordDecision(r, rt, a, nil)
				reqctx.Admit(r.Context(), a)
				next.ServeHTTP(w, r)
				return
			}
			p := problem.Of(err)
			p.Route = rt.Name
			if p.Resource == "" {
				p.Resource = a.Resource
			}
			if p.PresentedEpoch == nil && a.EpochPresented {
				p.PresentedEpoch = problem.EpochPtr(a.Epoch)
			}
			if p.Decision() == tokens.DecisionStale && p.Detail == "" {
				p.Detail = err.Error()
			}
			obs.RecordDecision(r, rt, a, &p)
			obs.AuditRefusal(r, a, &p)
			if refusals.Allow(p.Route, observe.ProblemDecision(&p), p.Status) {
				logRefusal(refusals.Logger(), r, a, &p)
			}
			if a.Holder == "" && rt.Tokens != policy.TokensSigned {
				p = rawAnswer(p, err, r, routes)
			}
			problem.Write(w, r, p)
		})
	}
}

// decide presents the request to the fence inside a fencing.check span
// (when the request's span records).
func decide(r *http.Request, rt *policy.Route, fence *tokens.Fence, obs *observe.Observer) (reqctx.Admission, error) {
	ctx, span := obs.ChildSpan(r.Context(), "fencing.check")
	p := tokens.Presented{
		Tokens:   r.Header.Values(TokenHeader),
		Verifier: rt.Verifier,
		Bound:    rt.Resource != nil,
		Resource: func() (string, error) { return rt.ResolveResource(r) },
		Source:   rt.EpochSource,
	}
	p.RawOnLeased = rt.RawOnLeased
	a, err := fence.Decide(ctx, p)
	if span.IsRecording() {
		span.SetAttributes(observe.AttrResource.String(a.Resource), observe.AttrDecision.String(string(tokens.DecisionOf(err))))
		if a.EpochPresented {
			span.SetAttributes(observe.AttrEpochPresented.Int64(a.Epoch))
		}
		span.End()
	}
	return a, err
}

// logRefusal writes one line per refused write, whether or not its trace
// is sampled, with the request's context: a logger wrapped by
// telemetry.LogHandler adds its trace_id and span_id. It never logs the
// token.
func logRefusal(log *slog.Logger, r *http.Request, a reqctx.Admission, p *problem.Problem) {
	attrs := []slog.Attr{
		slog.String("decision", string(p.Decision())),
		slog.String("route", p.Route),
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int("status", p.Status),
	}
	if p.Resource != "" {
		attrs = append(attrs, slog.String("resource", p.Resource))
	}
	if p.PresentedEpoch != nil {
		attrs = append(attrs, slog.Int64("presented_epoch", int64(*p.PresentedEpoch)))
	}
	if p.CurrentEpoch != nil {
		attrs = append(attrs, slog.Int64("current_epoch", int64(*p.CurrentEpoch)))
	}
	if a.Holder != "" {
		attrs = append(attrs, slog.String("holder", a.Holder))
	}
	if p.Cause != nil {
		attrs = append(attrs, slog.String("error", p.Cause.Error()))
	}
	level := slog.LevelInfo
	if p.Status == http.StatusServiceUnavailable {
		level = slog.LevelWarn
	}
	log.LogAttrs(r.Context(), level, "fenced write refused", attrs...)
}
