package control

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/fencegw/fencegw/gateway/observe"
	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/fencegw/fencegw/wire"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/attribute"

	"github.com/fencegw/fencegw/tokens"
)

// TokenIssuer signs a lease's epoch into a token for its holder.
type TokenIssuer interface {
	Issue(holder, resource string, epoch int64) (token string, expires time.Time, err error)
}

type acquireRequest struct {
	Holder     *string  `json:"holder"`
	TTLSeconds *seconds `json:"ttl_seconds"`
	// LockDelaySeconds overrides the configured lock_delay for this grant.
	LockDelaySeconds *seconds `json:"lock_delay_seconds"`
}

// acquireTerms returns the terms req asks for, or the detail of a 400
// naming the parameter out of its range: ttl_seconds from 1 to 86400,
// lock_delay_seconds from 0 to 3600 (the configured lock_delay when
// absent), both in whole milliseconds. A store that keeps fewer TTLs
// exactly (tokens.TTLLimiter: etcd, whole seconds from 2) narrows
// ttl_seconds to them.
func (c *control) acquireTerms(req acquireRequest) (tokens.Terms, string) {
	lo, step := tokens.LeaseTTLRange(c.Fence.Store())
	ttl, detail := req.TTLSeconds.stepped("ttl_seconds", lo, tokens.MaxLeaseTTL, step)
	if detail != "" {
		return tokens.Terms{}, detail
	}
	terms := tokens.Terms{TTL: ttl, LockDelay: c.LockDelay}
	if req.LockDelaySeconds != nil {
		if terms.LockDelay, detail = req.LockDelaySeconds.duration("lock_delay_seconds", 0, tokens.MaxLockDelay); detail != "" {
			return tokens.Terms{}, detail
		}
	}
	return terms, ""
}

type holderRequest struct {
	Holder *string     `json:"holder"`
	Epoch  *wire.Epoch `json:"epoch"`
}

// maxLeaseBody caps lease request bodies.
const maxLeaseBody = 64 << 10

func (c *control) mountLeases(r chi.Router) {
	changes := r.With(requireJSON)
	changes.Post("/v1/leases/{name}/acquire", c.acquire)
	changes.Post("/v1/leases/{name}/renew", c.renew)
	changes.Post("/v1/leases/{name}/release", c.release)
	r.Get("/v1/leases/{name}", c.getLease)
	r.Get("/v1/leases/{name}/watch", c.watchLease)
}

func (c *control) acquire(w http.ResponseWriter, r *http.Request) {
	name, ok := leaseName(w, r)
	if !ok {
		return
	}
	var req acquireRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Holder == nil || req.TTLSeconds == nil {
		badRequest(w, r, "the body needs \"holder\" and \"ttl_seconds\"")
		return
	}
	terms, detail := c.acquireTerms(req)
	if detail != "" {
		badRequest(w, r, detail)
		return
	}
	by, ok := c.caller(w, r)
	if !ok {
		return
	}
	if err := c.reserveLease(r.Context(), name, by); err != nil {
		c.leaseError(w, r, "acquire", name, err)
		return
	}
	g, err := c.Fence.Acquire(r.Context(), name, *req.Holder, terms, by)
	c.settleLease(by, g, err)
	if err != nil {
		c.leaseError(w, r, "acquire", name, err)
		return
	}
	c.Observer.LeaseGranted(r.Context(), g)
	c.recordGrant(r.Context(), g)
	attrs := []slog.Attr{slog.String("lease", name), slog.String("holder", g.Holder), slog.Int64("epoch", g.Epoch)}
	if g.Owner != "" {
		attrs = append(attrs, slog.String("owner", g.Owner))
	}
	if g.Previous != nil && g.Previous.Holder != g.Holder {
		attrs = append(attrs, slog.String("previous_holder", g.Previous.Holder), slog.Int64("previous_epoch", g.Previous.Epoch),
			slog.Bool("previous_held", g.Previous.Held))
	}
	c.Logger.LogAttrs(r.Context(), slog.LevelInfo, "lease granted", attrs...)
	c.writeLease(w, r, g.Lease)
}

// recordGrant records a grant in the lease history: the lapse of the grant
// it followed, when that one lapsed without a release, and the grant, with
// the one before it when it took over from another.
func (c *control) recordGrant(ctx context.Context, g tokens.Grant) {
	now := c.Observer.Now()
	prev := g.Previous
	if prev != nil && prev.Epoch < g.Epoch && !prev.Held && !prev.Released {
		lapse := prev.ExpiresAt
		if lapse.IsZero() || lapse.After(now) {
			lapse = now
		}
		c.Observer.LeaseHistory(ctx, lapse, tokens.LeaseExpired, *prev, nil)
	}
	if prev != nil && (prev.Holder == g.Holder && prev.Epoch == g.Epoch) {
		prev = nil // the holder acquired its live grant again
	}
	c.Observer.LeaseHistory(ctx, now, tokens.LeaseAcquired, g.Lease, prev)
}

func (c *control) renew(w http.ResponseWriter, r *http.Request) {
	name, holder, epoch, by, ok := c.heldBy(w, r)
	if !ok {
		return
	}
	l, err := c.Fence.Renew(r.Context(), name, holder, epoch, by)
	if err != nil {
		c.Observer.LeaseEvent(r.Context(), "fencing.lease.renew_failed", c.Observer.LeaseRenewFailures, name, holder, epoch,
			attribute.String("error", err.Error()))
		c.leaseError(w, r, "renew", name, err)
		return
	}
	c.Observer.LeaseHistory(r.Context(), c.Observer.Now(), tokens.LeaseRenewed, l, nil)
	c.writeLease(w, r, l)
}

func (c *control) release(w http.ResponseWriter, r *http.Request) {
	name, holder, epoch, by, ok := c.heldBy(w, r)
	if !ok {
		return
	}
	if err := c.Fence.Release(r.Context(), name, holder, epoch, by); err != nil {
		c.leaseError(w, r, "release", name, err)
		return
	}
	c.quota.forget()
	c.Observer.LeaseEvent(r.Context(), "fencing.lease.released", c.Observer.LeaseReleases, name, holder, epoch)
	c.Observer.LeaseHistory(r.Context(), c.Observer.Now(), tokens.LeaseReleased, tokens.Lease{Name: name, Holder: holder, Epoch: epoch}, nil)
	c.Logger.LogAttrs(r.Context(), slog.LevelInfo, "lease released", slog.String("lease", name),
		slog.String("holder", holder), slog.Int64("epoch", epoch), slog.String("caller", by.Name))
	w.WriteHeader(http.StatusNoContent)
}

func (c *control) getLease(w http.ResponseWriter, r *http.Request) {
	name, ok := leaseName(w, r)
	if !ok {
		return
	}
	l, err := c.Fence.Lease(r.Context(), name)
	if err != nil {
		c.leaseError(w, r, "get", name, err)
		return
	}
	writeJSON(w, http.StatusOK, leaseState(l))
}

// caller returns the request's lease caller (see APIKeys.caller), or
// answers 401 and returns false.
func (c *control) caller(w http.ResponseWriter, r *http.Request) (tokens.Caller, bool) {
	by, ok := c.Keys.caller(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="fencegw"`)
		problem.WriteError(w, r, problem.ErrNoAPIKey)
	}
	return by, ok
}

// heldBy reads a renew's or release's lease name, holder and epoch, and
// its caller; having answered the request when they cannot be read.
func (c *control) heldBy(w http.ResponseWriter, r *http.Request) (name, holder string, epoch int64, by tokens.Caller, ok bool) {
	if name, holder, epoch, ok = c.holderEpoch(w, r); ok {
		by, ok = c.caller(w, r)
	}
	return name, holder, epoch, by, ok
}

func (c *control) holderEpoch(w http.ResponseWriter, r *http.Request) (string, string, int64, bool) {
	name, ok := leaseName(w, r)
	if !ok {
		return "", "", 0, false
	}
	var req holderRequest
	if !decodeBody(w, r, &req) {
		return "", "", 0, false
	}
	if req.Holder == nil || req.Epoch == nil {
		badRequest(w, r, "the body needs \"holder\" and \"epoch\"")
		return "", "", 0, false
	}
	return name, *req.Holder, int64(*req.Epoch), true
}

// writeLease answers with a lease and a fresh token for its epoch.
func (c *control) writeLease(w http.ResponseWriter, r *http.Request, l tokens.Lease) {
	st := leaseState(l)
	if c.Issuer != nil {
		tok, exp, err := c.Issuer.Issue(l.Holder, l.Name, l.Epoch)
		if err != nil {
			problem.WriteError(w, r, problem.Refuse(problem.KindInternal, "the token could not be signed: "+err.Error()))
			return
		}
		st.Token = tok
		st.TokenExpiresAt = &exp
	}
	writeJSON(w, http.StatusOK, st)
}

func leaseState(l tokens.Lease) wire.LeaseState {
	return wire.LeaseState{Name: l.Name, Holder: l.Holder, Epoch: wire.Epoch(l.Epoch), ExpiresAt: l.ExpiresAt.UTC(),
		TTLSeconds: l.TTL.Seconds(), LockDelaySeconds: l.LockDelay.Seconds(), Held: l.Held, Owner: l.Owner}
}

// leaseError answers a lease operation's error (see problem.Of), logging
// through the refusal log what an operator should see (leaseErrorLine).
func (c *control) leaseError(w http.ResponseWriter, r *http.Request, op, name string, err error) {
	p := problem.Of(err)
	p.Lease = name
	if p.Cause != nil {
		p.Detail = "the store could not confirm the " + op
	}
	if level, msg, attrs := leaseErrorLine(op, err, &p); msg != "" &&
		c.Refusals.Allow(controlRoute(r, "lease "+op), observe.ProblemDecision(&p), p.Status) {
		c.Logger.LogAttrs(r.Context(), level, msg, append([]slog.Attr{slog.String("lease", name), slog.String("type", p.Type)}, attrs...)...)
	}
	if errors.Is(err, tokens.ErrLeaseNotFound) {
		p.Detail = "no lease named " + strconv.Quote(name) + " was ever acquired"
	}
	problem.Write(w, r, p)
}

func leaseName(w http.ResponseWriter, r *http.Request) (string, bool) {
	name, err := pathParam(r, "name")
	if err == nil {
		err = tokens.ValidateResource(name)
	}
	if err != nil {
		problem.WriteError(w, r, err)
		return "", false
	}
	return name, true
}

func badRequest(w http.ResponseWriter, r *http.Request, detail string) {
	problem.WriteError(w, r, problem.Refuse(problem.KindBadRequest, detail))
}
