package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const probeLong = `Asks a gateway's control API whether it is ready (GET --path on --api) and exits
0 when it answers 200; otherwise it exits 1 with the reason on one line of
stderr: not ready (503 while the store does not answer or while draining),
unreachable, too slow, or a bad flag. It is the health check of images without
a shell or curl; --path /healthz checks liveness instead. /readyz and /healthz
need no API key. The flags are checked before anything is dialled.

Unlike the other commands, probe exits 1, not 2, on a bad flag or argument:
container runtimes reserve the other exit codes of a health check.`

// probeFlags are the checked flags of a probe.
type probeFlags struct {
	api     *apiFlags
	path    string
	timeout time.Duration
}

// addProbeFlags defines the probe's flags on fs.
func addProbeFlags(fs *pflag.FlagSet) *probeFlags {
	f := &probeFlags{api: addAPIFlags(fs, false)}
	fs.StringVar(&f.path, "path", "/readyz", "`path` to GET on the control API: /readyz (readiness) or /healthz (liveness)")
	fs.DurationVar(&f.timeout, "timeout", 3*time.Second, "give up after this `duration`; /readyz may wait 2s for the store")
	return f
}

// check checks the flags, but not the files the TLS flags name
// (apiFlags.client loads them).
func (f *probeFlags) check() error {
	switch {
	case !strings.HasPrefix(f.path, "/") || strings.ContainsAny(f.path, "?#"):
		return fmt.Errorf("--path %q: want a path such as /readyz", f.path)
	case f.timeout <= 0:
		return fmt.Errorf("--timeout %s: want a positive duration", f.timeout)
	}
	return f.api.check()
}

// parseProbe parses and checks a probe's flags as the probe command does
// (the deployment tests check health checks with it). For -h it prints the
// flags on help and returns pflag.ErrHelp.
func parseProbe(args []string, help io.Writer) (probeFlags, error) {
	fs := pflag.NewFlagSet("fencegw probe", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := addProbeFlags(fs)
	if err := fs.Parse(legacyFlags(args, map[string]bool{"api": true, "path": true, "timeout": true,
		"tls-ca": true, "tls-cert": true, "tls-key": true, "tls-server-name": true})); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(help, fs.FlagUsages())
		}
		return *f, err
	}
	if fs.NArg() > 0 {
		return *f, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return *f, f.check()
}

func newProbeCmd() *cobra.Command {
	var f *probeFlags
	cmd := &cobra.Command{
		Use:         "probe",
		Short:       "Exit 0 if the gateway's /readyz answers 200 (a health check)",
		Long:        probeLong,
		Annotations: map[string]string{usageExitAnnotation: "1"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return badUsage(cmd, err)
			}
			return f.probe(cmd)
		},
	}
	f = addProbeFlags(cmd.Flags())
	return cmd
}

// probe checks a gateway's /readyz (or --path) over its control API.
func (f *probeFlags) probe(cmd *cobra.Command) error {
	c, err := f.api.client(f.timeout)
	if err != nil {
		return failure(err)
	}
	defer c.Close()
	a, err := c.Do(cmd.Context(), http.MethodGet, f.path, nil)
	if err != nil {
		return failuref("not ready: %v", err)
	}
	if a.Status != http.StatusOK {
		return failuref("not ready: GET %s: %s", c.URL(f.path), a)
	}
	return nil
}
