// Package server is fencegw's composition root: the one place the gateway
// is put together. New builds, from a validated configuration, the store,
// the fence over it, the token authority, the routes with their epoch
// sources and upstream transports, the observer, the proxy handler and the
// control API handler. The binary, the demo, every test harness and the
// benchmark assemble a gateway here and nowhere else.
//
// A Server owns what it opened: Close releases the store (unless it was
// handed one), the sources and the transports. Serve listens and serves
// both handlers until its context ends, then drains.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencegw/fencegw/gateway/audit"
	"github.com/fencegw/fencegw/gateway/control"
	"github.com/fencegw/fencegw/gateway/idempotency"
	"github.com/fencegw/fencegw/gateway/observe"
	"github.com/fencegw/fencegw/gateway/upstream"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/telemetry"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/signed"
)

// OpenTimeout bounds opening the store, and the authority's key exchange
// with it, in New.
const OpenTimeout = 30 * time.Second

// Options are what New takes beyond the configuration. The zero value
// builds everything from the configuration alone.
type Options struct {
	// Logger receives the gateway's logs (slog.Default() when nil).
	Logger *slog.Logger
	// Telemetry provides tracing, metrics and propagation; nil reports
	// nothing and records no spans, so answers carry no trace ids
	// (telemetry.Setup with IgnoreEnv gives trace ids without exporting).
	Telemetry *telemetry.Telemetry
	// Store, when set, is used instead of opening the configured store;
	// the Server does not close it.
	Store tokens.Store
	// Authority, when set, replaces the one the configuration's signing
	// settings would build.
	Authority *signed.Authority
	// OpenSource, when set, opens the routes' epoch sources instead of
	// the built-in PostgreSQL and etcd ones; field names the setting.
	OpenSource func(field string, s *config.EpochSource) (tokens.EpochSource, error)
	// Transport, when set, carries every request to upstreams.
	Transport http.RoundTripper
	// WatchHeartbeat is how often idle lease watches send a comment
	// (control.DefaultWatchHeartbeat when 0).
	WatchHeartbeat time.Duration
	// Clock, when set, is the gateway's wall clock: tokens' iat and exp,
	// audit times, reported lease expiries (see tokens.Clock). When nil,
	// the system clock — or the fault suite's test hook (see
	// envTestClockFile).
	Clock tokens.Clock
}

// Server is one assembled gateway replica.
type Server struct {
	cfg       config.Config
	log       *slog.Logger
	tel       *telemetry.Telemetry
	store     tokens.Store
	ownsStore bool
	fence     *tokens.Fence
	auth      *signed.Authority
	obs       *observe.Observer
	routes    *gateway.Routes
	openSrc   func(field string, s *config.EpochSource) (tokens.EpochSource, error)
	transport http.RoundTripper
	proxy     http.Handler
	control   http.Handler
	draining  atomic.Bool
	stopping  chan struct{} // closed by Drain: lease watches end
	drainOnce sync.Once
	// stopPurge ends purgeLoop, which closes purged.
	stopPurge chan struct{}
	purged    chan struct{}
	reclaim   *reclaimLoop // ended leases' records, after leases.retention
	// audit records the durable audit; stopAudit ends its writing (with
	// a last flush), then audited closes.
	audit     *audit.Recorder
	stopAudit context.CancelFunc
	audited   chan struct{}
	// clock is the wall clock handed down; stopClock ends its reader.
	clock     tokens.Clock
	stopClock func()

	mu         sync.Mutex // guards sources and transports across reloads
	sources    *sourceSet
	retired    []*sourceSet // replaced by a reload, closing on a timer
	transports []*upstream.Transport
}

// New assembles a gateway from c, which must be valid (see Validate). ctx
// bounds opening the store; nothing New starts outlives Close.
func New(ctx context.Context, c config.Config, o Options) (s *Server, err error) {
	s = &Server{cfg: c, log: o.Logger, tel: o.Telemetry, store: o.Store, auth: o.Authority, openSrc: o.OpenSource,
		transport: o.Transport, stopping: make(chan struct{})}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.tel == nil {
		s.tel = &telemetry.Telemetry{}
	}
	built := s // an error return sets s to nil: close what was built
	defer func() {
		if err != nil {
			built.Close()
		}
	}()
	if err = checkKeyFiles(c, s.log); err != nil {
		return nil, err
	}
	if s.clock, s.stopClock, err = newClock(o.Clock, os.Getenv, s.log); err != nil {
		return nil, err
	}
	if s.obs, err = observe.NewObserver(s.tel.TracerProvider, s.tel.MeterProvider, s.tel.Propagator); err != nil {
		return nil, err
	}
	s.obs.ResourceLabels = c.Telemetry.ResourceLabels
	s.obs.Clock = s.clock
	openCtx, cancel := context.WithTimeout(ctx, OpenTimeout)
	defer cancel()
	if s.store == nil {
		if s.store, err = openStore(openCtx, c, s.clock, s.log); err != nil {
			return nil, err
		}
		s.ownsStore = true
	}
	if s.audit, err = audit.NewRecorder(s.store, audit.Options{Replica: replicaName(c.Audit.Replica),
		Interval: c.Audit.Interval.D(), Flush: c.Audit.Flush.D(), MaxPending: c.Audit.History.MaxPending, JunkMaxPending: c.Audit.Junk.MaxPending,
		StoreTimeout: c.StoreTimeout.D(), Logger: s.log, MeterProvider: s.tel.MeterProvider, Clock: s.clock}); err != nil {
		return nil, err
	}
	s.obs.Audit = s.audit
	if s.auth == nil {
		if s.auth, err = newAuthority(openCtx, c, s.store, s.clock, s.log); err != nil {
			return nil, err
		}
	}
	if s.transport == nil {
		s.transport = s.newTransport(nil)
	}
	s.sources = &sourceSet{timeout: c.StoreTimeout.D()}
	table, err := s.routeTable(c, s.sources)
	if err != nil {
		return nil, err
	}
	s.routes = gateway.NewRoutes(table)
	s.fence = tokens.NewFence(s.obs.ObserveStore(s.store), tokens.FenceOptions{StoreTimeout: c.StoreTimeout.D()})
	s.handlers(c, o)
	s.stopPurge, s.purged = make(chan struct{}), make(chan struct{})
	go s.purgeLoop(s.stopPurge, s.purged)
	s.reclaim = startReclaim(s.store, reclaimTerms{retention: c.Leases.Retention.D(), every: reclaimEvery, batch: reclaimBatch,
		timeout: c.StoreTimeout.D()}, s.log)
	var auditCtx context.Context
	auditCtx, s.stopAudit = context.WithCancel(context.Background())
	s.audited = make(chan struct{})
	go func() {
		defer close(s.audited)
		s.audit.Run(auditCtx)
	}()
	return s, nil
}

// handlers builds the proxy and the control API over what New opened,
// sharing one RefusalLog so that one cap holds for both.
func (s *Server) handlers(c config.Config, o Options) {
	refusals := observe.NewRefusalLog(s.log, observe.RefusalLogOptions{LinesPerSecond: c.LogRefusalsPerSecond})
	s.proxy = gateway.New(gateway.Options{Routes: s.routes, Fence: s.fence, Transport: s.transport, Logger: s.log, Refusals: refusals,
		MaxBodyBytes: c.MaxBodyBytes, UpstreamTimeout: c.UpstreamTimeout.D(), Observer: s.obs,
		Idempotency: idempotency.Options{TTL: c.Idempotency.TTL.D(), MaxAnswerBytes: c.Idempotency.MaxAnswerBytes,
			// A write is in flight at most UpstreamTimeout; its outcome
			// is recorded within StoreTimeout after.
			InFlightFor: c.UpstreamTimeout.D() + c.StoreTimeout.D() + time.Second, SettleTimeout: c.StoreTimeout.D()}})
	var metrics http.Handler
	if o.Telemetry != nil {
		metrics = o.Telemetry.MetricsHandler()
	}
	s.control = control.NewAPI(control.Options{Fence: s.fence, Logger: s.log, Issuer: s.auth,
		JWKS: s.auth.Keys.JWKS, Keys: apiKeys(c), Observer: s.obs, Metrics: metrics, MetricsPublic: c.Telemetry.MetricsPublic, Draining: &s.draining,
		Pprof: c.Telemetry.Pprof, LockDelay: c.LockDelay.D(), Stopping: s.stopping,
		WatchHeartbeat: o.WatchHeartbeat, UITraceURL: c.UI.TraceURL, Refusals: refusals, Browser: browserOptions(c),
		WatchWriteTimeout: c.Watch.WriteTimeout.D(), MaxWatchers: c.Watch.MaxWatchers, MaxLiveLeases: c.Leases.MaxLive})
}

// Proxy returns the fenced reverse proxy's handler.
func (s *Server) Proxy() http.Handler { return s.proxy }

// Control returns the control API's handler.
func (s *Server) Control() http.Handler { return s.control }

// Fence returns the fence the gateway decides with.
func (s *Server) Fence() *tokens.Fence { return s.fence }

// Authority returns the token authority the gateway signs and verifies with.
func (s *Server) Authority() *signed.Authority { return s.auth }

// Routes returns the route table in force.
func (s *Server) Routes() *policy.Table { return s.routes.Table() }

// FlushAudit writes the audit entries this replica holds to the store now,
// rather than at the next audit.flush tick.
func (s *Server) FlushAudit(ctx context.Context) error { return s.audit.Flush(ctx) }

// Drain makes /readyz answer 503, so load balancers stop sending traffic
// while in-flight requests finish, and ends every lease watch.
func (s *Server) Drain() {
	s.draining.Store(true)
	s.drainOnce.Do(func() { close(s.stopping) })
}

// Reload swaps in the routes of c for requests that start afterwards, with
// their epoch sources opened afresh; the replaced routes' sources are
// closed once no request can still be checking against them. Only routes
// reload: it reports whether anything else differs, which takes effect at
// the next start. A c whose routes cannot be built changes nothing.
func (s *Server) Reload(c config.Config) (others bool, err error) {
	next := &sourceSet{timeout: s.cfg.StoreTimeout.D()}
	table, err := s.routeTable(c, next)
	if err != nil {
		next.Close()
		return false, err
	}
	s.routes.Swap(table)
	s.mu.Lock()
	old := s.sources
	s.sources = next
	s.retired = append(slices.DeleteFunc(s.retired, (*sourceSet).isClosed), old)
	s.mu.Unlock()
	old.retire()
	return !sameBesidesRoutes(c, s.cfg), nil
}

// Close releases what the Server opened. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if s.stopPurge != nil {
		close(s.stopPurge)
		<-s.purged
		s.stopPurge = nil
	}
	s.reclaim.close()
	if s.stopAudit != nil {
		s.stopAudit() // the recorder writes what it holds, then returns
		<-s.audited
		s.stopAudit = nil
	}
	if s.sources != nil {
		errs = append(errs, s.sources.Close())
	}
	for _, r := range s.retired { // those whose timer has not fired yet
		errs = append(errs, r.Close())
	}
	s.retired = nil
	for _, t := range s.transports {
		t.CloseIdleConnections()
	}
	s.transports = nil
	if s.ownsStore && s.store != nil {
		errs = append(errs, s.store.Close())
		s.ownsStore = false
	}
	if s.stopClock != nil {
		s.stopClock()
		s.stopClock = nil
	}
	return errors.Join(errs...)
}

// replicaName is the configured audit replica name, or the host name.
func replicaName(configured string) string {
	if configured != "" {
		return configured
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "fencegw"
}

// routeTable builds the route table of c, opening its epoch sources into
// sources.
func (s *Server) routeTable(c config.Config, sources *sourceSet) (*policy.Table, error) {
	open := sources.open
	if s.openSrc != nil {
		open = s.openSrc
	}
	routes, err := policyRoutes(c, routeDeps{Signed: s.auth.Verifier, OpenSource: open, Transport: s.upstreamTransport})
	if err != nil {
		return nil, err
	}
	return policy.NewTable(routes)
}

// upstreamTransport returns the transport toward an upstream with its own
// TLS settings.
func (s *Server) upstreamTransport(tc *tls.Config) http.RoundTripper { return s.newTransport(tc) }

func (s *Server) newTransport(tc *tls.Config) *upstream.Transport {
	t := upstream.NewTransport(upstream.TransportOptions{DialTimeout: s.cfg.UpstreamDialTimeout.D(),
		ResponseHeaderTimeout: s.cfg.UpstreamResponseHeaderTimeout.D(), TLS: tc})
	s.mu.Lock()
	s.transports = append(s.transports, t)
	s.mu.Unlock()
	return t
}

// newAuthority builds the token authority from c's signing settings: the
// key file, or a key generated once and kept beside the embedded store's
// file or in a shared store.
func newAuthority(ctx context.Context, c config.Config, store tokens.Store, clock tokens.Clock, log *slog.Logger) (*signed.Authority, error) {
	o := signed.AuthorityOptions{KeyFile: c.Signing.KeyFile, Algorithm: c.Signing.Algorithm,
		VerifyKeyFiles: c.Signing.VerifyKeyFiles, Issuer: c.Signing.Issuer, Audience: c.Signing.Audience,
		Lifetime: c.Signing.TokenLifetime.D(), Clock: clock}
	if config.KindOf(c.Store) == config.StoreEmbedded {
		o.KeepBeside = keptKeyPath(c.Store)
	} else if keeper, ok := store.(tokens.KeyKeeper); ok {
		o.Keeper = keeper
	}
	a, err := signed.NewAuthority(ctx, o, func(msg string) { log.Warn(msg) })
	if err != nil {
		return nil, fmt.Errorf("token authority: %w", err)
	}
	return a, nil
}
