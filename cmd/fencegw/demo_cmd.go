package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/fencegw/fencegw/cmd/fencegw/internal/demo"
)

// demoCmd tells the seed article's story in this process (package
// cmd/fencegw/internal/demo). It exits 0 when the story went as told, and 1 naming the
// step that did not.
func demoCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fencegw demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quiet := fs.Bool("quiet", false, "print only the closing summary line")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: fencegw demo [--quiet]\n\n"+
			"Runs a stale leader's story in this process, with no services and no set-up: an embedded\n"+
			"store, a sample email API and the gateway, all on 127.0.0.1. Exits 0 when every step\n"+
			"behaves as told, 1 otherwise.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fencegw demo: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	err := demo.Run(ctx, demo.Options{Out: stdout, Quiet: *quiet, Version: version})
	var f *demo.Failure
	switch {
	case err == nil:
		return 0
	case ctx.Err() != nil && errors.As(err, &f):
		fmt.Fprintf(stderr, "fencegw demo: interrupted at t=%.1fs\n", f.At.Seconds())
	default:
		fmt.Fprintf(stderr, "fencegw demo: FAILED at %v\n", err)
	}
	return 1
}
