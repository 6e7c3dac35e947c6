package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

const probeUsage = `Usage: fencegw probe [--api URL] [--path /readyz] [--timeout 3s]
                     [--tls-ca FILE] [--tls-cert FILE --tls-key FILE] [--tls-server-name NAME]

Asks a gateway's control API whether it is ready (GET --path on --api) and exits
0 when it answers 200; otherwise it exits 1 with the reason on one line of
stderr: not ready (503 while the store does not answer or while draining),
unreachable, too slow, or a bad flag. It is the health check of images without
a shell or curl; --path /healthz checks liveness instead. /readyz and /healthz
need no API key. The flags are checked before anything is dialled.

`

// probeFlags are the checked flags of a probe.
type probeFlags struct {
	api     *apiFlags
	path    string
	timeout time.Duration
}

// parseProbe parses and checks a probe's flags, but not the files the
// TLS flags name (apiFlags.client loads them). For -h it prints the usage on
// help and returns flag.ErrHelp.
func parseProbe(args []string, help io.Writer) (probeFlags, error) {
	fs := flag.NewFlagSet("fencegw probe", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // one line on a bad flag, not the usage
	f := probeFlags{api: addAPIFlags(fs, false)}
	fs.StringVar(&f.path, "path", "/readyz", "`path` to GET on the control API: /readyz (readiness) or /healthz (liveness)")
	fs.DurationVar(&f.timeout, "timeout", 3*time.Second, "give up after this `duration`; /readyz may wait 2s for the store")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(help, probeUsage)
			fs.SetOutput(help)
			fs.PrintDefaults()
			return f, err
		}
		return f, fmt.Errorf("%w (fencegw probe -h for the flags)", err)
	}
	switch {
	case fs.NArg() > 0:
		return f, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case !strings.HasPrefix(f.path, "/") || strings.ContainsAny(f.path, "?#"):
		return f, fmt.Errorf("--path %q: want a path such as /readyz", f.path)
	case f.timeout <= 0:
		return f, fmt.Errorf("--timeout %s: want a positive duration", f.timeout)
	}
	return f, f.api.check()
}

// probe checks a gateway's /readyz (or --path) over its control API.
// Every failure exits 1, flags included: container runtimes reserve other
// exit codes of a health check.
func probe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "fencegw probe: %s\n", oneLine(fmt.Sprintf(format, a...)))
		return 1
	}
	f, err := parseProbe(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return fail("%v", err)
	}
	c, err := f.api.client(f.timeout)
	if err != nil {
		return fail("%v", err)
	}
	defer c.Close()
	a, err := c.Do(ctx, http.MethodGet, f.path, nil)
	if err != nil {
		return fail("not ready: %v", err)
	}
	if a.Status != http.StatusOK {
		return fail("not ready: GET %s: %s", c.URL(f.path), a)
	}
	return 0
}

// oneLine folds every run of white space in s into one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
