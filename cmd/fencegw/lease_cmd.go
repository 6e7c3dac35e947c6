package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/fencegw/fencegw/wire"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/fencegw/fencegw/cmd/fencegw/internal/apiclient"
)

const leaseUsage = `Usage:
  fencegw lease acquire NAME --holder H [--ttl 15s] [--lock-delay 5s]
  fencegw lease renew   NAME --holder H --epoch E
  fencegw lease release NAME --holder H --epoch E
  fencegw lease get     NAME
  fencegw lease watch   NAME          # print its events as they come (JSON lines)

Flags common to all: --api URL (default $FENCEGW_API or http://127.0.0.1:8081),
--api-key KEY (default $FENCEGW_API_KEY); for an https control API, --tls-ca
FILE, --tls-cert FILE --tls-key FILE and --tls-server-name NAME. The answer's
JSON is printed on stdout; a refusal's problem document on stderr, with exit
status 1.
`

// apiTimeout bounds each call of the lease and token commands.
const apiTimeout = 30 * time.Second

// leaseCmd calls the control API's lease endpoints.
func leaseCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 || strings.HasPrefix(args[1], "-") {
		fmt.Fprint(stderr, leaseUsage)
		return 2
	}
	op, name := args[0], args[1]
	if op == "watch" {
		return leaseWatch(ctx, name, args[2:], stdout, stderr)
	}
	if !apiclient.IsLeaseOp(op) {
		fmt.Fprintf(stderr, "fencegw lease: unknown operation %q\n\n%s", op, leaseUsage)
		return 2
	}
	fs := flag.NewFlagSet("fencegw lease "+op, flag.ContinueOnError)
	fs.SetOutput(stderr)
	api := addAPIFlags(fs, true)
	holder := fs.String("holder", "", "the lease holder's `name`")
	ttl := fs.Duration("ttl", 15*time.Second, "lease `duration` (acquire)")
	lockDelay := fs.Duration("lock-delay", 0, "after the grant lapses unreleased, nobody gets it for this `duration` (acquire; default: the gateway's lock_delay)")
	var epoch epochFlag
	fs.Var(&epoch, "epoch", "the `epoch` held, in decimal digits (renew, release)")
	if err := fs.Parse(args[2:]); err != nil {
		return 2
	}
	if (op == "renew" || op == "release") && epoch == 0 {
		fmt.Fprintf(stderr, "fencegw lease %s: -epoch is required: the epoch the holder holds\n", op)
		return 2
	}
	req := apiclient.LeaseRequest{Holder: *holder, TTL: *ttl, Epoch: int64(epoch)}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "lock-delay" {
			req.LockDelay = lockDelay
		}
	})
	c, err := api.client(apiTimeout)
	if err != nil {
		fmt.Fprintf(stderr, "fencegw lease %s: %v\n", op, err)
		return 2
	}
	defer c.Close()
	a, err := c.Lease(ctx, op, name, req)
	if err != nil {
		fmt.Fprintf(stderr, "fencegw lease %s: %v\n", op, err)
		return 1
	}
	if a.Status >= 300 {
		fmt.Fprintf(stderr, "fencegw lease %s: %d %s\n%s\n", op, a.Status, http.StatusText(a.Status), bytes.TrimSpace(a.Body))
		return 1
	}
	if len(a.Body) == 0 {
		fmt.Fprintf(stdout, "{\"status\":%d}\n", a.Status)
		return 0
	}
	stdout.Write(a.Body)
	return 0
}

// leaseWatch prints lease name's events as JSON lines until interrupted.
func leaseWatch(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fencegw lease watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	api := addAPIFlags(fs, true)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	c, err := api.client(0) // a watch lasts
	if err != nil {
		fmt.Fprintf(stderr, "fencegw lease watch: %v\n", err)
		return 2
	}
	defer c.Close()
	err = c.WatchLease(ctx, name, "", func(ev apiclient.LeaseEvent) error {
		_, err := fmt.Fprintf(stdout, "%s\n", ev.Data)
		return err
	})
	if err != nil {
		fmt.Fprintf(stderr, "fencegw lease watch: %v\n", err)
		return 1
	}
	return 0
}

// epochFlag is an -epoch flag: decimal digits only, from 1 to 2^63-1 (no
// sign, base prefix or underscore: 010 is ten, never eight).
type epochFlag wire.Epoch

func (e *epochFlag) String() string { return wire.Epoch(*e).String() }

func (e *epochFlag) Set(s string) error {
	v, err := wire.ParseEpoch(s)
	if err != nil {
		return err
	}
	if v == 0 {
		return errors.New("an epoch is at least 1")
	}
	*e = epochFlag(v)
	return nil
}
