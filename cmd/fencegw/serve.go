package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/telemetry"
	"github.com/fencegw/fencegw/tokens"
)

// routeFlag collects repeated PREFIX=UPSTREAM flags into routes of one
// token mode.
type routeFlag struct {
	routes *[]config.Route
	mode   policy.TokenMode
}

func (r routeFlag) String() string { return "" }

func (r routeFlag) Set(v string) error {
	prefix, upstream, ok := strings.Cut(v, "=")
	if !ok || prefix == "" || upstream == "" {
		return errors.New("want PREFIX=UPSTREAM, e.g. /email/=http://127.0.0.1:9000")
	}
	*r.routes = append(*r.routes, config.Route{Prefix: prefix, Upstream: upstream, Tokens: string(r.mode)})
	return nil
}

// loadServeConfig builds the configuration from the file (if any) and the
// flags, which override it, and validates the result.
func loadServeConfig(args []string, stderr io.Writer) (config.Config, error) {
	fs := flag.NewFlagSet("fencegw serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		file      = fs.String("config", "", "YAML configuration `file`")
		listen    = fs.String("listen", "", "proxy listen `address` (default 127.0.0.1:8080)")
		apiListen = fs.String("api-listen", "", "control API listen `address` (default 127.0.0.1:8081)")
		store     = fs.String("store", "", "store: a file `path`, postgres://… or etcd://host:port (default fencegw.db)")
		logLevel  = fs.String("log-level", "", "log `level`: debug, info, warn, error")
		logFormat = fs.String("log-format", "", "log `format`: json or text")
		routes    []config.Route
	)
	fs.Var(routeFlag{&routes, policy.TokensRaw}, "route",
		"add a route with raw epochs, `PREFIX=UPSTREAM`; the resource comes from the Fencing-Resource header (repeatable)")
	fs.Var(routeFlag{&routes, policy.TokensSigned}, "signed-route",
		"add a route with signed tokens, `PREFIX=UPSTREAM`; the resource comes from the token (repeatable)")
	if err := fs.Parse(args); err != nil {
		return config.Config{}, err
	}
	if fs.NArg() > 0 {
		return config.Config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	c := config.Default()
	if *file != "" {
		var err error
		if c, err = loadFile(*file); err != nil {
			return config.Config{}, err
		}
	}
	for dst, v := range map[*string]string{&c.Listen: *listen, &c.APIListen: *apiListen, &c.Store: *store,
		&c.LogLevel: *logLevel, &c.LogFormat: *logFormat} {
		if v != "" {
			*dst = v
		}
	}
	c.Routes = append(c.Routes, routes...)
	if err := c.Validate(); err != nil {
		return config.Config{}, err
	}
	return c, nil
}

func loadFile(path string) (config.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return config.Config{}, fmt.Errorf("read config: %w", err)
	}
	c, err := config.Parse(data)
	if err != nil {
		return config.Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// serve runs the gateway until ctx is done, then drains in-flight requests.
func serve(ctx context.Context, args []string, stderr io.Writer) int {
	c, err := loadServeConfig(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "fencegw: invalid configuration:\n%s\n", indent(err.Error()))
		return 2
	}
	log := newLogger(stderr, c.LogLevel, c.LogFormat)
	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceVersion: version})
	if err != nil {
		fmt.Fprintf(stderr, "fencegw: invalid telemetry configuration: %v\n", err)
		return 2
	}
	defer func() {
		// Flush what the last requests traced before exiting.
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tel.Shutdown(sctx); err != nil {
			log.Warn("telemetry shutdown", "error", err.Error())
		}
	}()
	reload := func() (config.Config, error) { return loadServeConfig(args, io.Discard) }
	if err := runGateway(ctx, c, reload, tel, log); err != nil {
		log.Error("fencegw stopped", "error", err.Error())
		return 1
	}
	return 0
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }

// runGateway serves c until ctx is done. On SIGHUP it calls reload and, if
// the new configuration is valid, swaps in its routes; a bad one keeps the
// routes in force and logs why.
func runGateway(ctx context.Context, c config.Config, reload func() (config.Config, error), tel *telemetry.Telemetry,
	log *slog.Logger) error {
	obs, err := gateway.NewObserver(tel.TracerProvider, tel.MeterProvider, tel.Propagator, gateway.NewAudit(c.Telemetry.AuditSize))
	if err != nil {
		return err
	}
	obs.ResourceLabels = c.Telemetry.ResourceLabels
	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	store, err := openStore(openCtx, c.Store)
	if err != nil {
		return err
	}
	defer store.Close()
	auth, err := newAuthority(openCtx, c, store, log)
	if err != nil {
		return err
	}
	sources := &sourceSet{timeout: c.StoreTimeout.D()}
	defer func() { sources.Close() }()
	var upstreamTransports []*http.Transport
	defer func() {
		for _, t := range upstreamTransports {
			t.CloseIdleConnections()
		}
	}()
	newTransport := func(tc *tls.Config) http.RoundTripper {
		t := gateway.NewTransport(gateway.TransportOptions{DialTimeout: c.UpstreamDialTimeout.D(),
			ResponseHeaderTimeout: c.UpstreamResponseHeaderTimeout.D(), TLS: tc})
		upstreamTransports = append(upstreamTransports, t)
		return t
	}
	deps := config.RouteDeps{Signed: auth.verifier, Transport: newTransport}
	table, err := routeTable(c, deps, sources)
	if err != nil {
		return err
	}
	routes := gateway.NewRoutes(table)
	if !c.ControlAuthenticated() {
		log.Warn("control API without api_keys: no caller is authenticated; serving on loopback only", "api_listen", c.APIListen)
	}

	proxyLn, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	apiLn, err := net.Listen("tcp", c.APIListen)
	if err != nil {
		proxyLn.Close()
		return fmt.Errorf("api_listen: %w", err)
	}
	if a, ok := apiLn.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() && !c.ControlAuthenticated() {
		// "localhost" may resolve elsewhere; trust the bound address only.
		proxyLn.Close()
		apiLn.Close()
		return fmt.Errorf("api_listen: %s is not a loopback address: without api_keys the control API serves on loopback only", a)
	}

	fence := tokens.NewFence(obs.ObserveStore(store), tokens.FenceOptions{StoreTimeout: c.StoreTimeout.D()})
	transport := gateway.NewTransport(gateway.TransportOptions{
		DialTimeout:           c.UpstreamDialTimeout.D(),
		ResponseHeaderTimeout: c.UpstreamResponseHeaderTimeout.D(),
	})
	defer transport.CloseIdleConnections()
	proxy := newServer(c, gateway.New(gateway.Options{Routes: routes, Fence: fence,
		Transport: transport, Logger: log, MaxBodyBytes: c.MaxBodyBytes, UpstreamTimeout: c.UpstreamTimeout.D(),
		Observer: obs}), log)
	var draining atomic.Bool
	api := newServer(c, gateway.NewControlAPI(gateway.ControlOptions{Fence: fence, Logger: log, Issuer: auth,
		JWKS: auth.keys.JWKS, Keys: c.GatewayKeys(), Observer: obs, Metrics: tel.MetricsHandler(), Draining: &draining}), log)

	// The proxy refuses framing tricks before net/http reads a request.
	proxy.ConnContext = gateway.ConnContext
	if proxyLn, err = guardListener(proxyLn, c, log); err != nil {
		apiLn.Close()
		return fmt.Errorf("tls: %w", err)
	}
	if apiLn, err = tlsListener(apiLn, c.APITLS); err != nil {
		proxyLn.Close()
		return fmt.Errorf("api_tls: %w", err)
	}
	errc := make(chan error, 2)
	go func() { errc <- serveOn(proxy, proxyLn) }()
	go func() { errc <- serveOn(api, apiLn) }()
	log.Info("fencegw serving", "listen", proxyLn.Addr().String(), "api_listen", apiLn.Addr().String(),
		"store", string(config.KindOf(c.Store)), "routes", len(table.Routes()), "version", version,
		"exporting_traces", tel.Exporting)

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
wait:
	for {
		select {
		case err := <-errc:
			proxy.Close()
			api.Close()
			return err
		case <-hup:
			sources = reloadRoutes(c, reload, deps, routes, sources, log)
		case <-ctx.Done():
			break wait
		}
	}
	log.Info("shutting down: /readyz answers 503, no new connections, draining in-flight requests",
		"timeout", c.ShutdownTimeout.D().String())
	draining.Store(true)
	drainCtx, cancelDrain := context.WithTimeout(context.Background(), c.ShutdownTimeout.D())
	defer cancelDrain()
	// The proxy drains first; the control API keeps answering (503 on
	// /readyz) until it has.
	perr := proxy.Shutdown(drainCtx)
	aerr := api.Shutdown(drainCtx)
	if err := errors.Join(perr, aerr); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	log.Info("fencegw stopped cleanly")
	return nil
}

func newServer(c config.Config, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: c.ReadHeaderTimeout.D(),
		IdleTimeout:       c.IdleTimeout.D(),
		MaxHeaderBytes:    c.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// routeTable builds the route table of c, opening its epoch sources into
// sources.
func routeTable(c config.Config, deps config.RouteDeps, sources *sourceSet) (*policy.Table, error) {
	deps.OpenSource = sources.open
	routes, err := c.PolicyRoutes(deps)
	if err != nil {
		return nil, err
	}
	return policy.NewTable(routes)
}

// reloadRoutes rereads the configuration and swaps in its routes. Requests
// in flight finish on the routes they started with; connections stay open.
// Only routes reload: other changes are reported and wait for a restart.
// It returns the epoch sources now in force: the new table's after a
// swap (the replaced ones are retired), the running ones after a refusal
// (whatever the refused table opened is closed).
func reloadRoutes(running config.Config, reload func() (config.Config, error), deps config.RouteDeps,
	routes *gateway.Routes, sources *sourceSet, log *slog.Logger) *sourceSet {
	next := &sourceSet{timeout: sources.timeout}
	c, err := reload()
	if err == nil {
		var table *policy.Table
		if table, err = routeTable(c, deps, next); err == nil {
			routes.Swap(table)
			sources.retire()
			log.Info("SIGHUP: routes reloaded", "routes", len(table.Routes()))
			nc, cur := c, running
			nc.Routes, cur.Routes = nil, nil
			if !reflect.DeepEqual(nc, cur) {
				log.Warn("SIGHUP: only routes reload; other changes take effect at the next restart")
			}
			return next
		}
	}
	next.Close()
	log.Error("SIGHUP: reload refused, the routes in force stay", "error", err.Error())
	return sources
}

// guardListener guards the proxy's connections (gateway.GuardListener),
// terminating TLS itself when c.TLS is set.
func guardListener(ln net.Listener, c config.Config, log *slog.Logger) (net.Listener, error) {
	o := gateway.GuardOptions{MaxHeaderBytes: c.MaxHeaderBytes, HandshakeTimeout: c.ReadHeaderTimeout.D(), Logger: log}
	if c.TLS != nil {
		tc, err := c.TLS.ServerConfig()
		if err != nil {
			ln.Close()
			return nil, err
		}
		tc.NextProtos = []string{"h2", "http/1.1"}
		o.TLS = tc
	}
	return gateway.GuardListener(ln, o), nil
}

// tlsListener wraps ln in TLS when t is set.
func tlsListener(ln net.Listener, t *config.ListenerTLS) (net.Listener, error) {
	if t == nil {
		return ln, nil
	}
	tc, err := t.ServerConfig()
	if err != nil {
		ln.Close()
		return nil, err
	}
	tc.NextProtos = []string{"h2", "http/1.1"}
	return tls.NewListener(ln, tc), nil
}

func serveOn(s *http.Server, ln net.Listener) error {
	if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
