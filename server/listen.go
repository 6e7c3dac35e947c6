package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"reflect"

	"github.com/fencegw/fencegw/gateway/guard"

	"github.com/fencegw/fencegw/config"
)

// Listeners are the gateway's two bound sockets.
type Listeners struct {
	Proxy, Control net.Listener
}

// Listen binds the configured proxy and control addresses. Without API
// keys or client certificates the control API may only bind a loopback
// address: the bound address decides, not the name ("localhost" may
// resolve elsewhere).
func Listen(c config.Config) (Listeners, error) {
	proxyLn, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return Listeners{}, fmt.Errorf("listen: %w", err)
	}
	apiLn, err := net.Listen("tcp", c.APIListen)
	if err != nil {
		proxyLn.Close()
		return Listeners{}, fmt.Errorf("api_listen: %w", err)
	}
	if a, ok := apiLn.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() && !c.ControlAuthenticated() {
		proxyLn.Close()
		apiLn.Close()
		return Listeners{}, fmt.Errorf("api_listen: %s is not a loopback address: without api_keys the control API serves on loopback only", a)
	}
	return Listeners{Proxy: proxyLn, Control: apiLn}, nil
}

// Serve serves the proxy and the control API on ls until ctx ends or a
// listener fails, then drains: /readyz answers 503 at once, the proxy
// stops accepting and finishes in-flight requests, and the control API
// answers until the proxy has, all within shutdown_timeout. ready, when
// set, is called once both are serving, with their addresses.
func (s *Server) Serve(ctx context.Context, ls Listeners, ready func(proxy, control net.Addr)) error {
	c := s.cfg
	proxy, api := s.httpServer(s.proxy), s.httpServer(s.control)
	// The proxy refuses framing tricks before net/http reads a request.
	proxy.ConnContext = guard.ConnContext
	if err := s.limitConnections(&ls); err != nil {
		return err
	}
	proxyLn, err := guardListener(ls.Proxy, c, s.log)
	if err != nil {
		ls.Control.Close()
		return fmt.Errorf("tls: %w", err)
	}
	apiLn, err := tlsListener(ls.Control, c.APITLS)
	if err != nil {
		proxyLn.Close()
		return fmt.Errorf("api_tls: %w", err)
	}
	if !c.ControlAuthenticated() {
		s.log.Warn("control API without api_keys: no caller is authenticated; serving on loopback only", "api_listen", c.APIListen)
	}
	errc := make(chan error, 2)
	go func() { errc <- serveOn(proxy, proxyLn) }()
	go func() { errc <- serveOn(api, apiLn) }()
	if ready != nil {
		ready(proxyLn.Addr(), apiLn.Addr())
	}
	select {
	case err := <-errc:
		proxy.Close()
		api.Close()
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down: /readyz answers 503, no new connections, draining in-flight requests",
		"timeout", c.ShutdownTimeout.D().String())
	s.Drain()
	drainCtx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout.D())
	defer cancel()
	perr := proxy.Shutdown(drainCtx)
	aerr := api.Shutdown(drainCtx)
	if err := errors.Join(perr, aerr); err != nil {
		// Whatever is left is cut now, so the store can be closed.
		proxy.Close()
		api.Close()
		return fmt.Errorf("drain: %w", err)
	}
	return nil
}

// httpServer serves h with the configured limits: read_header_timeout
// for a request's head, body_timeout and min_body_rate for its body and
// write_timeout for its answer (guard.Budget), idle_timeout between
// requests.
func (s *Server) httpServer(h http.Handler) *http.Server {
	budget := guard.BudgetOptions{BodyTimeout: s.cfg.BodyTimeout.D(), MinBodyRate: s.cfg.MinBodyRate,
		WriteTimeout: s.cfg.WriteTimeout.D()}
	return &http.Server{
		Handler:           guard.Budget(budget)(h),
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout.D(),
		IdleTimeout:       s.cfg.IdleTimeout.D(),
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		// net/http's own complaints (TLS handshakes, panics) as
		// structured lines, apart from the requests' lines.
		ErrorLog: slog.NewLogLogger(s.log.With(slog.String("component", "http_server")).Handler(), slog.LevelWarn),
	}
}

// limitConnections caps the connections open on each of ls's listeners at
// max_connections (guard.LimitConnections), closing both on failure.
func (s *Server) limitConnections(ls *Listeners) error {
	limit := func(ln net.Listener, name string) (net.Listener, error) {
		return guard.LimitConnections(ln, guard.ConnLimitOptions{Max: s.cfg.MaxConnections,
			Listener: name, MeterProvider: s.tel.MeterProvider})
	}
	proxyLn, perr := limit(ls.Proxy, "proxy")
	apiLn, aerr := limit(ls.Control, "control")
	if err := errors.Join(perr, aerr); err != nil {
		ls.Proxy.Close()
		ls.Control.Close()
		return fmt.Errorf("max_connections: %w", err)
	}
	ls.Proxy, ls.Control = proxyLn, apiLn
	return nil
}

// guardListener guards the proxy's connections (guard.NewListener),
// terminating TLS itself when c.TLS is set.
func guardListener(ln net.Listener, c config.Config, log *slog.Logger) (net.Listener, error) {
	o := guard.ListenerOptions{MaxHeaderBytes: c.MaxHeaderBytes, HandshakeTimeout: c.ReadHeaderTimeout.D(), Logger: log}
	if c.TLS != nil {
		tc, err := c.TLS.ServerConfig()
		if err != nil {
			ln.Close()
			return nil, err
		}
		tc.NextProtos = []string{"h2", "http/1.1"}
		o.TLS = tc
	}
	return guard.NewListener(ln, o), nil
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

// sameBesidesRoutes reports whether a and b differ only in their routes.
func sameBesidesRoutes(a, b config.Config) bool {
	a.Routes, b.Routes = nil, nil
	return reflect.DeepEqual(a, b)
}
