package control

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fencegw/fencegw/gateway/observe"
	"github.com/fencegw/fencegw/gateway/problem"
	"github.com/fencegw/fencegw/gateway/ui"

	"github.com/fencegw/fencegw/wire"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/fencegw/fencegw/tokens"
)

// Options assemble the control API.
type Options struct {
	Fence  *tokens.Fence
	Logger *slog.Logger
	// ReadyTimeout bounds the store check behind /readyz (default 2s).
	ReadyTimeout time.Duration
	// Issuer signs tokens for granted and renewed leases; without one the
	// lease answers carry no token.
	Issuer TokenIssuer
	// JWKS returns the public keys that verify issued tokens; nil serves
	// an empty key set.
	JWKS func() ([]byte, error)
	// Keys authenticate callers; empty lets every caller through.
	Keys APIKeys
	// Observer reports spans, lease metrics and serves the audit.
	Observer *observe.Observer
	// Metrics serves GET /metrics; nil serves 404. With Keys, a caller
	// needs a key (any key) unless MetricsPublic.
	Metrics http.Handler
	// MetricsPublic serves /metrics without a key even when Keys are set.
	MetricsPublic bool
	// Pprof serves Go's runtime profiles under /debug/pprof/ to admin
	// keys (to every caller without keys, when the control API serves on
	// loopback only).
	Pprof bool
	// Draining, once true, makes /readyz answer 503 so load balancers stop
	// sending traffic while in-flight requests finish.
	Draining *atomic.Bool
	// LockDelay is the lock-delay of grants whose acquire names none
	// (0: none); see tokens.Terms.
	LockDelay time.Duration
	// WatchHeartbeat is how often an idle lease watch sends a comment
	// (DefaultWatchHeartbeat when 0).
	WatchHeartbeat time.Duration
	// WatchWriteTimeout bounds every write to a lease watch: a watcher
	// that stops reading is dropped (DefaultWatchWriteTimeout when 0).
	WatchWriteTimeout time.Duration
	// MaxWatchers caps the lease watches open at once; beyond it a watch
	// is answered 503 with Retry-After (DefaultMaxWatchers when 0).
	MaxWatchers int
	// Stopping, once closed, ends every lease watch at once, even one
	// blocked writing to a watcher that does not read: the gateway is
	// shutting down.
	Stopping <-chan struct{}
	// UITraceURL links trace ids on the timeline page (see NewUI).
	UITraceURL string
	// Refusals throttles the log lines of refused and failed lease calls
	// (a RefusalLog of its own over Logger when nil); share the proxy's.
	Refusals *observe.RefusalLog
	// Browser keeps the control API safe within a web browser's reach: the
	// Host and Origin every request must have (see BrowserOptions).
	Browser BrowserOptions
	// MaxLiveLeases caps the live leases in the store (held, or in their
	// lock-delay); beyond it, and beyond a key's APIKey.MaxLeases, an
	// acquire is answered 429 (0: no global cap). See leaseQuota.
	MaxLiveLeases int
}

// NewAPI returns the control API handler, served on its own listener:
//
//	GET  /healthz                      200 while the process runs
//	GET  /readyz                       200 while the store answers, 503 otherwise
//	GET  /.well-known/jwks.json        the public keys that verify issued tokens
//	POST /v1/leases/{name}/acquire     grant a lease (and fence resource name)
//	POST /v1/leases/{name}/renew       extend a held lease
//	POST /v1/leases/{name}/release     end a held lease
//	GET  /v1/leases/{name}             a lease's state
//	GET  /v1/leases/{name}/watch       a lease's changes, as server-sent events
//	DELETE /v1/idempotency/{resource}/{key}  forget an Idempotency-Key's record (admin)
//	GET  /v1/fences/{resource}         the resource's current epoch (admin)
//	GET  /v1/audit/rejections          refused writes, cluster-wide (admin)
//	GET  /v1/audit/leases              lease history, cluster-wide (admin)
//	GET  /v1/audit/resources           the audit's resource names, paged (admin)
//	GET  /ui/                          the leader timeline page (see NewUI)
//	GET  /metrics                      the metrics (a key with Keys, unless MetricsPublic)
//
// HEAD is answered wherever GET is, with GET's status and headers.
//
// With API keys, the lease endpoints need a key allowed for the lease name
// and the fence endpoint an admin key; the others are open.
//
// Whatever the keys, a request whose Host is not a name of the control API
// is answered 421, one whose Origin is not its own (or allowed) 403, and a
// POST or DELETE with a body or a Content-Type other than application/json
// 415 (see BrowserOptions): no web page can make a browser change state
// here, nor read what it serves.
//
// With API keys, a grant is owned by the key that acquired it (its name is
// recorded in the store, so every replica and every restart agrees). Renew,
// release, and an acquire of the live grant for the same holder need the
// owner or an admin key; any other key gets 403 lease-owned and no token.
// Acquiring a free or expired lease is a takeover open to every key allowed
// the name, and the new grant is the taker's. GET /v1/leases/{name} shows
// every key allowed the name the same state: holder, epoch, expiry and the
// owner's key name (never a secret, never a token). Without API keys grants
// have no owner and every caller may use every lease.
//
// An acquire that cannot raise the epoch (the lease's epoch or the
// resource's high-water mark is already 2^63-1) answers 409
// epoch-exhausted without Retry-After: retrying cannot help, the name is
// spent.
func NewAPI(o Options) http.Handler {
	o = o.withDefaults()
	return o.Observer.ServerHandler(NewRouter(o), "control")
}

// DefaultReadyTimeout bounds the store check behind /readyz.
const DefaultReadyTimeout = 2 * time.Second

// withDefaults fills what o leaves unset.
func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = DefaultReadyTimeout
	}
	if o.Observer == nil {
		o.Observer = observe.MustObserver()
	}
	if o.Refusals == nil {
		o.Refusals = observe.NewRefusalLog(o.Logger, observe.RefusalLogOptions{})
	}
	return o
}

// NewRouter returns the control API's router without the server
// spans NewAPI adds around it.
func NewRouter(o Options) chi.Router {
	o = o.withDefaults()
	c := &control{Options: o, quota: newLeaseQuota(o.MaxLiveLeases, o.Keys, DefaultQuotaPeriod)}
	if o.Fence != nil {
		c.hub = newWatchHub(o.Fence.Store(), o.Fence.Lease, o.MaxWatchers)
	}
	r := chi.NewRouter()
	// HEAD is answered wherever GET is: GET's handler, without the body.
	r.Use(nameSpanByRoute, o.Browser.guardBrowser, middleware.GetHead)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		problem.WriteError(w, r, problem.Refuse(problem.KindNotFound, "no control API endpoint at "+r.URL.Path))
	})
	mux := r
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		allowed := allowedMethods(mux, r.URL.Path)
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		problem.WriteError(w, r, problem.Refuse(problem.KindNotAllowed, r.Method+" is not allowed on "+r.URL.Path+"; allowed: "+strings.Join(allowed, ", ")))
	})
	r.Get("/healthz", c.healthz)
	r.Get("/readyz", c.readyz)
	r.Get("/.well-known/jwks.json", c.jwks)
	// The timeline page's files hold no data: they need no key; the audit
	// they read does.
	ui := ui.NewUI(o.UITraceURL)
	r.Get("/ui", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ui/", http.StatusMovedPermanently) })
	r.Get("/ui/", ui.ServeHTTP)
	r.Get("/ui/{asset}", ui.ServeHTTP)
	if o.Metrics != nil {
		metrics := o.Metrics
		if !o.MetricsPublic {
			metrics = o.Keys.requireKey(func(*APIKey, *http.Request) bool { return true })(metrics)
		}
		r.Method(http.MethodGet, "/metrics", metrics)
	}
	r.Group(func(r chi.Router) {
		r.Use(o.Keys.requireKey(func(k *APIKey, r *http.Request) bool {
			name, err := pathParam(r, "name")
			return err == nil && k.mayUseLease(name)
		}))
		c.mountLeases(r)
	})
	r.Group(func(r chi.Router) {
		r.Use(o.Keys.requireKey(func(k *APIKey, _ *http.Request) bool { return k.Admin }))
		r.Get("/v1/fences/{resource}", c.getFence)
		r.With(requireJSON).Delete("/v1/idempotency/{resource}/{key}", c.forgetIdemKey)
		r.Get("/v1/audit/rejections", c.rejections)
		r.Get("/v1/audit/leases", c.leaseHistory)
		r.Get("/v1/audit/resources", c.auditResources)
		if o.Pprof {
			mountPprof(r)
		}
	})
	return r
}

type control struct {
	Options
	hub   *watchHub   // the lease watches' fan-out
	quota *leaseQuota // nil: no cap
}

func (c *control) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (c *control) readyz(w http.ResponseWriter, r *http.Request) {
	if c.Draining != nil && c.Draining.Load() {
		problem.WriteError(w, r, problem.Refuse(problem.KindDraining, "the gateway is draining in-flight requests before it stops"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), c.ReadyTimeout)
	defer cancel()
	if err := c.Fence.Store().Ping(ctx); err != nil {
		c.Logger.LogAttrs(r.Context(), slog.LevelWarn, "not ready", slog.String("error", err.Error()))
		problem.WriteError(w, r, problem.RefuseCause(problem.KindStoreUnavailable, "the store does not answer", err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func (c *control) getFence(w http.ResponseWriter, r *http.Request) {
	resource, err := pathParam(r, "resource")
	if err == nil {
		err = tokens.ValidateResource(resource)
	}
	if err == nil {
		var epoch int64
		if epoch, err = c.Fence.Current(r.Context(), resource); err == nil {
			writeJSON(w, http.StatusOK, wire.FenceState{Resource: resource, Epoch: wire.Epoch(epoch)})
			return
		}
	}
	p := problem.Of(err)
	if p.Cause != nil {
		p.Detail, p.Resource = "the store could not be read", resource
		c.Logger.LogAttrs(r.Context(), slog.LevelWarn, "read fence failed", slog.String("resource", resource),
			slog.String("error", p.Cause.Error()))
	}
	problem.Write(w, r, p)
}

// allowedMethods lists the methods router serves path with.
func allowedMethods(router chi.Routes, path string) []string {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions} {
		if router.Match(chi.NewRouteContext(), m, path) ||
			(m == http.MethodHead && router.Match(chi.NewRouteContext(), http.MethodGet, path)) {
			allowed = append(allowed, m)
		}
	}
	return allowed
}

func (c *control) jwks(w http.ResponseWriter, r *http.Request) {
	body := []byte(`{"keys":[]}`)
	if c.JWKS != nil {
		var err error
		if body, err = c.JWKS(); err != nil {
			problem.WriteError(w, r, problem.Refuse(problem.KindInternal, "the key set is unavailable: "+err.Error()))
			return
		}
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Write(body)
}

// nameSpanByRoute names the request's server span after the matched route
// pattern, as the semantic conventions ask ("GET /v1/leases/{name}").
func nameSpanByRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		rc := chi.RouteContext(r.Context())
		if rc == nil || rc.RoutePattern() == "" {
			return
		}
		span := trace.SpanFromContext(r.Context())
		span.SetName(r.Method + " " + rc.RoutePattern())
		span.SetAttributes(semconv.HTTPRoute(rc.RoutePattern()))
	})
}

// pathParam returns a route parameter decoded exactly once: chi matches on
// the escaped path when the request has one, on the decoded path otherwise.
func pathParam(r *http.Request, key string) (string, error) {
	v := chi.URLParam(r, key)
	if r.URL.RawPath == "" {
		return v, nil
	}
	u, err := url.PathUnescape(v)
	if err != nil {
		return "", fmt.Errorf("%w: %w", tokens.ErrInvalidResource, err)
	}
	return u, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
