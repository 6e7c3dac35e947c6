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

// probe checks a gateway's /readyz (or --path) over its control API.
// Every failure exits 1, flags included: container runtimes reserve other
// exit codes of a health check.
func probe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "fencegw probe: %s\n", oneLine(fmt.Sprintf(format, a...)))
		return 1
	}
	fs := flag.NewFlagSet("fencegw probe", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // one line on a bad flag, not the usage
	api := addAPIFlags(fs, false)
	path := fs.String("path", "/readyz", "`path` to GET on the control API: /readyz (readiness) or /healthz (liveness)")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this `duration`; /readyz may wait 2s for the store")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, probeUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		return fail("%v (fencegw probe -h for the flags)", err)
	}
	switch {
	case fs.NArg() > 0:
		return fail("unexpected argument %q", fs.Arg(0))
	case !strings.HasPrefix(*path, "/") || strings.ContainsAny(*path, "?#"):
		return fail("--path %q: want a path such as /readyz", *path)
	case *timeout <= 0:
		return fail("--timeout %s: want a positive duration", *timeout)
	}
	c, err := api.client(*timeout)
	if err != nil {
		return fail("%v", err)
	}
	defer c.Close()
	a, err := c.Do(ctx, http.MethodGet, *path, nil)
	if err != nil {
		return fail("not ready: %v", err)
	}
	if a.Status != http.StatusOK {
		return fail("not ready: GET %s: %s", c.URL(*path), a)
	}
	return 0
}

// oneLine folds every run of white space in s into one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
