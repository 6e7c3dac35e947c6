package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/fencegw/fencegw/cmd/fencegw/internal/apiclient"
	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/server"
	"github.com/fencegw/fencegw/telemetry"
)

// world is everything the story runs against: the gateway (its proxy and
// control API), the email API behind it, and the HTTP clients the nodes
// share with it.
type world struct {
	n   *narrator
	dir string // the embedded store's directory

	tel       *telemetry.Telemetry
	gw        *server.Server
	stopServe context.CancelFunc
	served    chan error // Serve's result

	email *emailAPI

	// api is the control API client of node-a and of the narrator's
	// checks, the client `fencegw lease` uses.
	api        *apiclient.Client
	transports []*http.Transport

	proxyURL, apiURL string
}

// startWorld starts the email API and the gateway, on an embedded store in
// a temporary directory. close stops them and removes the directory.
func startWorld(ctx context.Context, n *narrator, version string) (w *world, err error) {
	w = &world{n: n}
	defer func() {
		if err != nil {
			err = errors.Join(err, w.close())
			w = nil
		}
	}()
	if w.dir, err = os.MkdirTemp("", "fencegw-demo-"); err != nil {
		return w, err
	}
	// OTEL_* ignored: nothing is exported and nothing is sampled, yet
	// every span has a trace id, which problems and the audit report.
	w.tel, err = telemetry.Setup(ctx, telemetry.Options{ServiceVersion: version, IgnoreEnv: true})
	if err != nil {
		return w, err
	}
	if w.email, err = startEmailAPI(n); err != nil {
		return w, err
	}
	if err := w.startGateway(ctx); err != nil {
		return w, err
	}
	w.api, err = apiclient.New(w.apiURL, "", apiclient.TLS{}, callTimeout)
	return w, err
}

// startGateway assembles the gateway as `fencegw serve` does, from a
// configuration: the defaults, the store in w.dir (where a fresh signing
// key is generated and kept), and one signed route to the email API for
// the story's resource. It serves the proxy and the control API on
// ephemeral ports of 127.0.0.1.
func (w *world) startGateway(ctx context.Context) error {
	c := config.Default()
	c.Store = filepath.Join(w.dir, "fencegw.db")
	c.Routes = []config.Route{{Prefix: "/email/", Upstream: w.email.url, Tokens: config.TokensSigned, Resource: resource}}
	c.UpstreamDialTimeout = config.Duration(callTimeout)
	c.UpstreamResponseHeaderTimeout = config.Duration(callTimeout)
	c.UpstreamTimeout = config.Duration(callTimeout)
	c.ShutdownTimeout = config.Duration(5 * time.Second)
	c.Audit.Flush = config.Duration(50 * time.Millisecond)
	if err := c.Validate(); err != nil {
		return err
	}
	var err error
	if w.gw, err = server.New(ctx, c, server.Options{Logger: slog.New(slog.DiscardHandler), Telemetry: w.tel}); err != nil {
		return err
	}
	proxyLn, err := listen()
	if err != nil {
		return err
	}
	apiLn, err := listen()
	if err != nil {
		proxyLn.Close()
		return err
	}
	w.proxyURL, w.apiURL = "http://"+proxyLn.Addr().String(), "http://"+apiLn.Addr().String()
	serveCtx, stop := context.WithCancel(context.Background()) // close ends it
	w.stopServe, w.served = stop, make(chan error, 1)
	go func() { w.served <- w.gw.Serve(serveCtx, server.Listeners{Proxy: proxyLn, Control: apiLn}, nil) }()
	return nil
}

// listen listens on an ephemeral port of 127.0.0.1, and nowhere else.
func listen() (net.Listener, error) {
	return net.Listen("tcp", "127.0.0.1:0")
}

// newTransport returns a client transport of its own, whose connections
// close shuts.
func (w *world) newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // 127.0.0.1 only, whatever HTTP_PROXY says
	w.transports = append(w.transports, t)
	return t
}

// close stops the gateway (draining it as SIGTERM does) and the email API,
// closes every connection, the store and the telemetry, and removes the
// store's directory. It leaves no goroutine running.
func (w *world) close() error {
	var errs []error
	w.closeIdle()
	if w.stopServe != nil {
		w.stopServe()
		if err := <-w.served; err != nil {
			errs = append(errs, fmt.Errorf("serve the gateway: %w", err))
		}
	}
	if w.email != nil {
		errs = append(errs, w.email.close())
	}
	if w.gw != nil {
		errs = append(errs, w.gw.Close())
	}
	w.closeIdle()
	if w.tel != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		errs = append(errs, w.tel.Shutdown(sctx))
	}
	if w.dir != "" {
		if err := os.RemoveAll(w.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", w.dir, err))
		}
	}
	return errors.Join(errs...)
}

// closeIdle closes the clients' idle connections.
func (w *world) closeIdle() {
	if w.api != nil {
		w.api.Close()
	}
	for _, t := range w.transports {
		t.CloseIdleConnections()
	}
}
