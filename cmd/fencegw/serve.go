package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/server"
	"github.com/fencegw/fencegw/telemetry"
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
		newStore  = fs.Bool("new-store", false, "acknowledge that the embedded store file was lost: create a new one beside a kept signing key, and rotate that key (one start only)")
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
	c.NewStore = *newStore
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
	floor := raiseHeapGoal()
	defer runtime.KeepAlive(floor)
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
	s, err := server.New(ctx, c, server.Options{Logger: log, Telemetry: tel})
	if err != nil {
		return err
	}
	defer s.Close()
	ls, err := server.Listen(c)
	if err != nil {
		return err
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	serveCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() {
		done <- s.Serve(serveCtx, ls, func(proxy, control net.Addr) {
			log.Info("fencegw serving", "listen", proxy.String(), "api_listen", control.String(),
				"store", string(config.KindOf(c.Store)), "routes", len(s.Routes().Routes()), "version", version,
				"exporting_traces", tel.Exporting)
		})
	}()
	for {
		select {
		case err := <-done:
			if err == nil {
				log.Info("fencegw stopped cleanly")
			}
			return err
		case <-hup:
			reloadRoutes(s, reload, log)
		}
	}
}

// reloadRoutes rereads the configuration and swaps in its routes. Requests
// in flight finish on the routes they started with; connections stay open.
// Only routes reload: other changes are reported and wait for a restart.
func reloadRoutes(s *server.Server, reload func() (config.Config, error), log *slog.Logger) {
	c, err := reload()
	if err == nil {
		var others bool
		if others, err = s.Reload(c); err == nil {
			log.Info("SIGHUP: routes reloaded", "routes", len(s.Routes().Routes()))
			if others {
				log.Warn("SIGHUP: only routes reload; other changes take effect at the next restart")
			}
			return
		}
	}
	log.Error("SIGHUP: reload refused, the routes in force stay", "error", err.Error())
}
