package main

import (
	"context"
	"errors"
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

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
func (r routeFlag) Type() string   { return "PREFIX=UPSTREAM" }

func (r routeFlag) Set(v string) error {
	prefix, upstream, ok := strings.Cut(v, "=")
	if !ok || prefix == "" || upstream == "" {
		return errors.New("want PREFIX=UPSTREAM, e.g. /email/=http://127.0.0.1:9000")
	}
	*r.routes = append(*r.routes, config.Route{Prefix: prefix, Upstream: upstream, Tokens: string(r.mode)})
	return nil
}

// serveOpts are serve's flags, which override the configuration file.
type serveOpts struct {
	file, listen, apiListen, store, logLevel, logFormat string
	newStore                                            bool
	routes                                              []config.Route
}

// addServeFlags defines serve's flags on fs.
func addServeFlags(fs *pflag.FlagSet) *serveOpts {
	o := &serveOpts{}
	fs.StringVar(&o.file, "config", "", "YAML configuration `file`")
	fs.StringVar(&o.listen, "listen", "", "proxy listen `address` (default 127.0.0.1:8080)")
	fs.StringVar(&o.apiListen, "api-listen", "", "control API listen `address` (default 127.0.0.1:8081)")
	fs.StringVar(&o.store, "store", "", "store: a file `path`, postgres://… or etcd://host:port (default fencegw.db)")
	fs.StringVar(&o.logLevel, "log-level", "", "log `level`: debug, info, warn, error")
	fs.StringVar(&o.logFormat, "log-format", "",
		"log `format`: json or text (default: log_format, json; a fatal error is text on a terminal unless this is json)")
	fs.BoolVar(&o.newStore, "new-store", false, "acknowledge that the embedded store file was lost: create a new one beside a kept signing key, and rotate that key (one start only)")
	fs.Var(routeFlag{&o.routes, policy.TokensRaw}, "route",
		"add a route with raw epochs, `PREFIX=UPSTREAM`; the resource comes from the Fencing-Resource header (repeatable)")
	fs.Var(routeFlag{&o.routes, policy.TokensSigned}, "signed-route",
		"add a route with signed tokens, `PREFIX=UPSTREAM`; the resource comes from the token (repeatable)")
	return o
}

// config builds the configuration from the file (if any) and the flags,
// which override it, and validates the result.
func (o *serveOpts) config() (config.Config, error) {
	c := config.Default()
	if o.file != "" {
		var err error
		if c, err = loadFile(o.file); err != nil {
			return config.Config{}, err
		}
	}
	for dst, v := range map[*string]string{&c.Listen: o.listen, &c.APIListen: o.apiListen, &c.Store: o.store,
		&c.LogLevel: o.logLevel, &c.LogFormat: o.logFormat} {
		if v != "" {
			*dst = v
		}
	}
	c.Routes = append(c.Routes, o.routes...)
	c.NewStore = o.newStore
	if err := c.Validate(); err != nil {
		return config.Config{}, err
	}
	return c, nil
}

// loadServeConfig parses serve's arguments as the serve command does and
// returns the configuration they give (the deployment tests check their
// serve lines with it).
func loadServeConfig(args []string, stderr io.Writer) (config.Config, error) {
	fs := pflag.NewFlagSet("fencegw serve", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	o := addServeFlags(fs)
	if err := fs.Parse(args); err != nil {
		return config.Config{}, err
	}
	if fs.NArg() > 0 {
		return config.Config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return o.config()
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

func newServeCmd(stderr io.Writer) *cobra.Command {
	var o *serveOpts
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the gateway",
		Long: "Runs the gateway until SIGTERM or SIGINT, then drains in-flight requests; SIGHUP reloads the routes.\n" +
			"The flags override the configuration file (--config); fencegw config example shows every key.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.serve(cmd, stderrIsTerminal(stderr))
		},
	}
	o = addServeFlags(cmd.Flags())
	for flag, values := range map[string][]cobra.Completion{"log-format": {"json", "text"}, "log-level": {"debug", "info", "warn", "error"}} {
		cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
	}
	return cmd
}

// serve runs the gateway until ctx is done, then drains in-flight requests.
// A fatal error is a log line in the configured format, or one line of text
// when stderr is a terminal and --log-format does not ask for JSON.
func (o *serveOpts) serve(cmd *cobra.Command, terminal bool) error {
	floor := raiseHeapGoal()
	defer runtime.KeepAlive(floor)
	ctx, stderr := cmd.Context(), cmd.ErrOrStderr()
	c, err := o.config()
	if err != nil {
		fmt.Fprintf(stderr, "fencegw serve: invalid configuration:\n%s\n", indent(err.Error()))
		return &exitError{code: exitUsage, err: err, printed: true}
	}
	log := newLogger(stderr, c.LogLevel, c.LogFormat)
	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceVersion: versionString()})
	if err != nil {
		return usageErr("invalid telemetry configuration: %v", err)
	}
	defer func() {
		// Flush what the last requests traced before exiting.
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tel.Shutdown(sctx); err != nil {
			log.Warn("telemetry shutdown", "error", err.Error())
		}
	}()
	if err := runGateway(ctx, c, o.config, tel, log); err != nil {
		if terminal && o.logFormat != "json" || o.logFormat == "text" {
			return failure(err)
		}
		log.Error("fencegw stopped", "error", err.Error())
		return reported(err)
	}
	return nil
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
				"store", string(config.KindOf(c.Store)), "routes", len(s.Routes().Routes()), "version", versionString(),
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
