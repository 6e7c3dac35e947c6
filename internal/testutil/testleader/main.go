// Command testleader is a leader process for fencegw's end-to-end tests: it
// campaigns for a lease with package leader and, while leading, does jobs
// that each write to the gateway with the token of the term the job started
// in — as real work does, and as a paused process does when it wakes. It
// prints one JSON line per event on stdout.
//
// By default it sets the token itself and steps down on any 412. With
// --transport its writes go through the Elector's Transport instead, in the
// term's context: the Transport attaches the token and ends the term on the
// gateway's stale-epoch 412 only, and the client follows redirects.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fencegw/fencegw/leader"
)

func main() {
	var (
		api      = flag.String("api", "http://127.0.0.1:8081", "control API")
		target   = flag.String("write", "", "URL to POST each job's write to")
		name     = flag.String("lease", "", "lease name")
		holder   = flag.String("holder", "", "holder name")
		lease    = flag.Duration("lease-duration", 3*time.Second, "lease duration")
		deadline = flag.Duration("renew-deadline", 2*time.Second, "renew deadline")
		retry    = flag.Duration("retry", 500*time.Millisecond, "retry period")
		job      = flag.Duration("job", 100*time.Millisecond, "work before each write")
		viaTr    = flag.Bool("transport", false, "write through the Elector's Transport")
		noWatch  = flag.Bool("no-watch", false, "do not follow the lease watch (learn of changes by renewing and writing)")
		rate     = flag.Float64("clock-rate", 1, "run the elector's clock at this rate of real time (below 1: a slow clock)")
	)
	flag.Parse()
	if *rate <= 0 {
		fmt.Fprintln(os.Stderr, "testleader: --clock-rate must be above 0")
		os.Exit(2)
	}
	out := &printer{w: os.Stdout}
	client := &http.Client{Timeout: 5 * time.Second}
	var e *leader.Elector
	e, err := leader.New(leader.Config{
		Endpoint: *api, Name: *name, Holder: *holder,
		LeaseDuration: *lease, RenewDeadline: *deadline, RetryPeriod: *retry, NoWatch: *noWatch,
		Clock: rateClock{start: time.Now(), rate: *rate},
		Callbacks: leader.Callbacks{
			OnStartedLeading: func(ctx context.Context, t leader.Term) {
				out.print(map[string]any{"event": "leading", "epoch": t.Epoch})
				for n := 0; ctx.Err() == nil; n++ {
					time.Sleep(*job) // a pause can strike here
					if *viaTr {
						// The Transport sets the token and ends the term.
						status := write(ctx, client, *target, "", *holder, n)
						out.print(map[string]any{"event": "write", "epoch": t.Epoch, "status": status, "n": n})
						continue
					}
					status := write(context.Background(), client, *target, t.Token, *holder, n)
					out.print(map[string]any{"event": "write", "epoch": t.Epoch, "status": status, "n": n})
					if status == http.StatusPreconditionFailed {
						e.StepDown(leader.ErrFenced)
						return
					}
				}
			},
			OnStoppedLeading: func(t leader.Term, reason error) {
				out.print(map[string]any{"event": "stopped", "epoch": t.Epoch, "reason": reason.Error(),
					"fenced": errors.Is(reason, leader.ErrFenced)})
			},
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if *viaTr {
		client.Transport = e.Transport(nil)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := e.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// write sends one job's write with the token of the term it started in
// (none when token is empty) and returns its status, 0 when it failed.
func write(ctx context.Context, c *http.Client, target, token, holder string, n int) int {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(fmt.Sprintf("job %d", n)))
	if token != "" {
		req.Header.Set("Fencing-Token", token)
	}
	req.Header.Set("X-Holder", holder)
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

type printer struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *printer) print(v map[string]any) {
	v["at"] = time.Now().UnixMilli()
	b, _ := json.Marshal(v)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.w.Write(append(b, '\n'))
}

// rateClock runs at rate of real time from start: a leader whose clock is
// slow (rate below 1) believes its lease lasts longer than it does.
type rateClock struct {
	start time.Time
	rate  float64
}

func (c rateClock) Now() time.Time {
	return c.start.Add(time.Duration(float64(time.Since(c.start)) * c.rate))
}

func (c rateClock) NewTimer(d time.Duration) *time.Timer {
	return time.NewTimer(time.Duration(float64(d) / c.rate))
}
