package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/cmd/fencegw/internal/apiclient"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/wire"
)

const leaseLong = `Acquire, renew, release, get or watch a lease through the gateway's control API.

Each command takes --api URL (default $FENCEGW_API or http://127.0.0.1:8081),
--api-key KEY (default $FENCEGW_API_KEY) and, for an https control API, --tls-ca
FILE, --tls-cert FILE --tls-key FILE and --tls-server-name NAME. The answer's
JSON is printed on stdout; a refusal's problem document on stderr, with exit
status 1. Flags are checked before anything is dialled: a bad one exits 2.`

// apiTimeout bounds each call of the lease and token commands.
const apiTimeout = 30 * time.Second

// leaseOpts are the flags of a lease command; each command defines those
// it sends.
type leaseOpts struct {
	api       *apiFlags
	holder    string
	ttl       time.Duration
	lockDelay time.Duration
	epoch     epochFlag
}

func newLeaseCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lease",
		Short: "Acquire, renew, release, get or watch a lease",
		Long:  leaseLong,
	}
	cmd.AddCommand(
		newLeaseOpCmd(apiclient.OpAcquire, "Acquire a lease: print its epoch (and token, with signed tokens) as JSON"),
		newLeaseOpCmd(apiclient.OpRenew, "Renew the lease the holder holds at --epoch"),
		newLeaseOpCmd(apiclient.OpRelease, "Release the lease the holder holds at --epoch"),
		newLeaseOpCmd(apiclient.OpGet, "Print a lease's state as JSON"),
		newLeaseWatchCmd(),
	)
	return cmd
}

// newLeaseOpCmd is `fencegw lease OP NAME`.
func newLeaseOpCmd(op, short string) *cobra.Command {
	o := &leaseOpts{}
	cmd := &cobra.Command{
		Use:               op + " NAME",
		Short:             short,
		Long:              short + ".\n\n" + leaseLong,
		Args:              exactArgs(1, "the lease NAME"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, op, args[0])
		},
	}
	fs := cmd.Flags()
	o.api = addAPIFlags(fs, true)
	switch op {
	case apiclient.OpAcquire:
		fs.StringVar(&o.holder, "holder", "", "the lease holder's `name` (required)")
		fs.DurationVar(&o.ttl, "ttl", 15*time.Second, "lease `duration`, from 1s to 24h in whole milliseconds")
		fs.DurationVar(&o.lockDelay, "lock-delay", 0,
			"after the grant lapses unreleased, nobody gets it for this `duration`, from 0 to 1h in whole milliseconds (default: the gateway's lock_delay)")
	case apiclient.OpRenew, apiclient.OpRelease:
		fs.StringVar(&o.holder, "holder", "", "the lease holder's `name` (required)")
		fs.Var(&o.epoch, "epoch", "the `epoch` held, in decimal digits (required)")
	}
	return cmd
}

// request checks the flags of lease command op and returns what it sends.
func (o *leaseOpts) request(cmd *cobra.Command, op string) (apiclient.LeaseRequest, error) {
	req := apiclient.LeaseRequest{Holder: o.holder, TTL: o.ttl, Epoch: int64(o.epoch)}
	if op == apiclient.OpGet {
		return req, nil
	}
	if err := checkHolder(o.holder); err != nil {
		return req, badUsage(cmd, err)
	}
	if op != apiclient.OpAcquire {
		if o.epoch == 0 {
			return req, badUsage(cmd, errors.New("--epoch is required: the epoch the holder holds"))
		}
		return req, nil
	}
	if err := checkDuration("ttl", o.ttl, tokens.MinLeaseTTL, tokens.MaxLeaseTTL); err != nil {
		return req, badUsage(cmd, err)
	}
	if cmd.Flags().Changed("lock-delay") {
		if err := checkDuration("lock-delay", o.lockDelay, 0, tokens.MaxLockDelay); err != nil {
			return req, badUsage(cmd, err)
		}
		req.LockDelay = &o.lockDelay
	}
	return req, nil
}

// checkHolder checks --holder as the gateway would: 1 to 256 bytes.
func checkHolder(h string) error {
	if h == "" || len(h) > tokens.MaxHolderLen {
		return fmt.Errorf("--holder %q: want a name of 1 to %d bytes", h, tokens.MaxHolderLen)
	}
	return nil
}

// checkDuration checks a lease duration flag against the gateway's range
// for it: from lo to hi in whole milliseconds.
func checkDuration(flag string, d, lo, hi time.Duration) error {
	if d < lo || d > hi || d%tokens.LeaseResolution != 0 {
		return fmt.Errorf("--%s %s: want from %gs to %gs in whole milliseconds", flag, d, lo.Seconds(), hi.Seconds())
	}
	return nil
}

func (o *leaseOpts) run(cmd *cobra.Command, op, name string) error {
	req, err := o.request(cmd, op)
	if err != nil {
		return err
	}
	c, err := o.api.client(apiTimeout)
	if err != nil {
		return badUsage(cmd, err)
	}
	defer c.Close()
	a, err := c.Lease(cmd.Context(), op, name, req)
	if err != nil {
		return failure(err)
	}
	if a.Status >= 300 {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d %s\n%s\n", cmd.CommandPath(), a.Status, http.StatusText(a.Status), bytes.TrimSpace(a.Body))
		return reported(fmt.Errorf("%d %s", a.Status, http.StatusText(a.Status)))
	}
	if len(a.Body) == 0 {
		fmt.Fprintf(cmd.OutOrStdout(), "{\"status\":%d}\n", a.Status)
		return nil
	}
	cmd.OutOrStdout().Write(a.Body)
	return nil
}

// newLeaseWatchCmd is `fencegw lease watch NAME`: the lease's events as
// JSON lines until interrupted.
func newLeaseWatchCmd() *cobra.Command {
	var api *apiFlags
	cmd := &cobra.Command{
		Use:               "watch NAME",
		Short:             "Print a lease's events as JSON lines as they come, until interrupted",
		Args:              exactArgs(1, "the lease NAME"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return leaseWatch(cmd, cmd.Context(), api, args[0])
		},
	}
	api = addAPIFlags(cmd.Flags(), true)
	return cmd
}

func leaseWatch(cmd *cobra.Command, ctx context.Context, api *apiFlags, name string) error {
	c, err := api.client(0) // a watch lasts
	if err != nil {
		return badUsage(cmd, err)
	}
	defer c.Close()
	err = c.WatchLease(ctx, name, "", func(ev apiclient.LeaseEvent) error {
		_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s\n", ev.Data)
		return err
	})
	if err != nil {
		return failure(err)
	}
	return nil
}

// epochFlag is an --epoch flag: decimal digits only, from 1 to 2^63-1 (no
// sign, base prefix or underscore: 010 is ten, never eight).
type epochFlag wire.Epoch

func (e *epochFlag) String() string { return wire.Epoch(*e).String() }
func (e *epochFlag) Type() string   { return "epoch" }

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
