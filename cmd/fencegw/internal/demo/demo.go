// Package demo tells the seed article's story against a real gateway, in
// one process and with no set-up: node-a leads and writes, freezes past its
// lease, node-b takes over with a higher epoch, and node-a wakes and its
// stale write is refused with 412 and a trace id. It is `fencegw demo`.
//
// Everything speaks HTTP on 127.0.0.1: the gateway is assembled by
// server.New on an embedded store in a temporary directory and served by
// Server.Serve, as `fencegw serve` does; the upstream is a sample email
// API. The nodes use the clients users use: node-a calls the lease API with
// cmd/fencegw/internal/apiclient, as `fencegw lease` does, and node-b is a
// leader.Elector whose Transport fences its writes.
//
// The story is a table of steps (story.go), each checking what it narrates.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// The story's timings: the seed article's 15 s lease, 10 s renew deadline
// and 2 s retry period, scaled down so that the story takes seconds.
const (
	leaseDuration = 3 * time.Second
	renewDeadline = 2 * time.Second
	retryPeriod   = 500 * time.Millisecond
	// oversleep is how long node-a stays frozen after node-b's grant.
	oversleep = 500 * time.Millisecond
	// callTimeout bounds every HTTP call of the story.
	callTimeout = 3 * time.Second
	// deadline bounds the whole story; it normally takes about 5 s.
	deadline = 20 * time.Second

	resource  = "invoice-sweeper"
	recipient = "billing@acme.example"
)

// Options configure Run.
type Options struct {
	// Out receives the narrative: one line per event, each stamped with
	// the time since Run began. Nil discards it.
	Out io.Writer
	// Quiet prints only the closing summary line.
	Quiet bool
	// Version is the service version the gateway's telemetry reports.
	Version string
}

// Failure is the error of a story that did not go as told: the step that
// failed, and when.
type Failure struct {
	Step string        // the step, or "set-up" or "shut down"
	At   time.Duration // since Run began
	Err  error
}

func (f *Failure) Error() string {
	return fmt.Sprintf("%s, %s: %v", stamp(f.At), f.Step, f.Err)
}

func (f *Failure) Unwrap() error { return f.Err }

// Run starts the gateway and the email API, tells the story, and stops
// everything, leaving no goroutine, connection or file behind. It returns
// nil when every step behaved as told, and otherwise a *Failure naming the
// first step that did not. It takes about 5 s, and at most 20 s.
func Run(ctx context.Context, o Options) error {
	if o.Out == nil {
		o.Out = io.Discard
	}
	n := newNarrator(o.Out, o.Quiet)
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	w, err := startWorld(ctx, n, o.Version)
	if err != nil {
		return n.failure("set-up", err)
	}
	failed := tell(ctx, w)
	if err := w.close(); err != nil {
		if failed == nil {
			return n.failure("shut down", err)
		}
		failed.Err = errors.Join(failed.Err, fmt.Errorf("shut down: %w", err))
	}
	if failed != nil {
		return failed
	}
	return nil
}
