package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

var (
	// ErrNotLeader is returned by the Transport for a request it did not
	// send because the Elector is not leading (or the request belongs to a
	// term that ended).
	ErrNotLeader = errors.New("leader: not leading")
	// ErrFenced is the reason of a step-down caused by the gateway's
	// stale-epoch refusal (412, urn:fencegw:problem:stale-epoch) of a
	// request sent through the Transport: a newer epoch was granted for the
	// resource, or its epoch source no longer vouches for this one.
	ErrFenced = errors.New("leader: fenced by a newer epoch")
	// ErrLeaseLost is the reason of a step-down caused by the authority
	// refusing a renewal (409), or by the renew deadline passing without a
	// successful renewal (then the reason also wraps ErrRenewDeadline).
	ErrLeaseLost = errors.New("leader: lease lost")
	// ErrRenewDeadline is wrapped, with ErrLeaseLost, by the reason of a
	// step-down on the Elector's own clock.
	ErrRenewDeadline = errors.New("leader: renew deadline passed")
	// ErrRunning is returned by Run while another Run of the same Elector
	// is in progress.
	ErrRunning = errors.New("leader: Run already in progress")
)

// errSteppedDown is the reason of StepDown(nil).
var errSteppedDown = errors.New("leader: stepped down")

// Term is one tenure of leadership: from a grant to the step-down.
type Term struct {
	// Epoch is the fencing epoch granted; it never changes within a term.
	Epoch int64
	// Token is the latest signed token for Epoch; empty when the authority
	// issues no tokens.
	Token string
	// TokenExpiresAt is when Token lapses, on the authority's clock; zero
	// without a token.
	TokenExpiresAt time.Time
	// LeaseExpiresAt is when the lease lapses unless renewed, on the
	// authority's clock, as of the latest grant or renewal. It is
	// informational: the Elector decides on its own monotonic clock.
	LeaseExpiresAt time.Time
}

// fencingValue is what the Transport sends as Fencing-Token: the token, or
// the epoch when the authority issues no token.
func (t Term) fencingValue() string {
	if t.Token != "" {
		return t.Token
	}
	return fmt.Sprint(t.Epoch)
}

func termOf(st leaseState) Term {
	t := Term{Epoch: int64(st.Epoch), Token: st.Token, LeaseExpiresAt: st.ExpiresAt}
	if st.TokenExpiresAt != nil {
		t.TokenExpiresAt = *st.TokenExpiresAt
	}
	return t
}

// Elector campaigns for one lease. Its methods are safe for concurrent use.
type Elector struct {
	cfg       Config
	api       *api
	log       *slog.Logger
	ownClient *http.Client // the default client, closed when Run returns

	running atomic.Bool

	mu  sync.Mutex
	cur *term // the current term; nil while not leading

	// events are the lease watch's, while Run runs.
	events chan leaseEvent
}

// term is the Elector's state of one Term.
type term struct {
	// Guarded by Elector.mu:
	Term
	deadline time.Time // monotonic: the term ends here unless renewed
	ended    bool
	reason   error // why it ended; set with ended

	ctx    context.Context    // given to OnStartedLeading
	cancel context.CancelFunc // cancels ctx
	down   chan struct{}      // closed when the term ended
	done   chan struct{}      // closed when OnStartedLeading returned
}

// New validates c (see Config.Validate) and returns an Elector. It sends
// nothing: Run campaigns.
func New(c Config) (*Elector, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c = c.withDefaults()
	e := &Elector{cfg: c, log: c.Logger.With(slog.String("lease", c.Name), slog.String("holder", c.Holder))}
	client := c.HTTPClient
	if client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		client = &http.Client{Transport: tr, Timeout: c.RetryPeriod}
		e.ownClient = client
	}
	var err error
	if e.api, err = newAPI(c, client); err != nil {
		return nil, err
	}
	return e, nil
}

// Current returns the current term while leading. It reports false once the
// term ended, and also once the renew deadline passed even if the Elector's
// goroutine has not yet noticed.
func (e *Elector) Current() (Term, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.cur
	if t == nil || !e.cfg.Clock.Now().Before(t.deadline) {
		return Term{}, false
	}
	return t.Term, true
}

// StepDown ends the current term now, if there is one: the Transport stops
// sending at once, the term's context is cancelled, and OnStoppedLeading is
// called with reason (a generic error when nil). The lease is not released:
// Run campaigns again after RetryPeriod, and as the lease may still be this
// holder's, it may win it back at once, with a higher epoch.
func (e *Elector) StepDown(reason error) {
	if reason == nil {
		reason = errSteppedDown
	}
	e.mu.Lock()
	t := e.cur
	e.mu.Unlock()
	if t != nil {
		e.end(t, reason)
	}
}

// end ends t if it has not ended: clears it (the Transport stops at once),
// records reason, cancels its context and wakes the loop. It reports
// whether this call ended t.
func (e *Elector) end(t *term, reason error) bool {
	e.mu.Lock()
	if t.ended {
		e.mu.Unlock()
		return false
	}
	t.ended, t.reason = true, reason
	if e.cur == t {
		e.cur = nil
	}
	e.mu.Unlock()
	t.cancel()
	close(t.down)
	return true
}

// Run campaigns for the lease until ctx is done, leading whenever it holds
// it, and returns ctx.Err(). It returns early with an *APIError when the
// authority refuses the configuration (bad name or holder, missing or wrong
// API key, wrong endpoint); such answers are not retried. Run returns only
// after its goroutines, OnStartedLeading included, have ended.
func (e *Elector) Run(ctx context.Context) error {
	if !e.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer e.running.Store(false)
	if e.ownClient != nil {
		defer e.ownClient.CloseIdleConnections()
	}
	// The lease watch tells of releases, lapses and takeovers as they
	// happen; polling and renewals go on without it.
	e.events = make(chan leaseEvent, 1)
	if !e.cfg.NoWatch {
		wctx, stopWatch := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() { defer close(watched); e.watch(wctx, e.events) }()
		defer func() { stopWatch(); <-watched }()
	}
	for {
		t, err := e.campaign(ctx)
		if err != nil {
			return err
		}
		err = e.lead(ctx, t)
		e.awaitWork(t)
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !e.sleep(ctx, e.cfg.RetryPeriod) {
			return ctx.Err()
		}
	}
}

// campaign asks for the lease until it is granted, ctx is done or the
// authority refuses the configuration.
func (e *Elector) campaign(ctx context.Context) (*term, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sent := e.cfg.Clock.Now()
		cctx, cancel := context.WithTimeout(ctx, e.cfg.RetryPeriod)
		st, err := e.api.acquire(cctx, e.cfg.LeaseDuration)
		cancel()
		if err == nil {
			return e.begin(ctx, st, sent), nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if isFatal(err) {
			e.log.LogAttrs(ctx, slog.LevelError, "lease acquire refused; not retrying", slog.String("error", err.Error()))
			return nil, err
		}
		// Poll every RetryPeriod, jittered, and at once when the lease
		// watch says the lease was released or lapsed. A 409's Retry-After
		// says when the holder's lease lapses unless renewed or released:
		// waiting for it would miss a release, so it is not honoured. Other answers'
		// Retry-After (503, 429) lengthen the wait, up to LeaseDuration.
		wait := jitter(e.cfg.RetryPeriod)
		if isHeld(err) {
			e.log.LogAttrs(ctx, slog.LevelDebug, "lease held by another holder", slog.String("error", err.Error()))
		} else {
			wait = max(wait, min(retryAfter(err), e.cfg.LeaseDuration))
			e.log.LogAttrs(ctx, slog.LevelWarn, "lease acquire failed", slog.String("error", err.Error()),
				slog.Duration("retry_in", wait))
		}
		if !e.waitOrFree(ctx, wait, e.events) {
			return nil, ctx.Err()
		}
	}
}

// begin starts the term granted by st, whose acquire was sent at sent.
func (e *Elector) begin(ctx context.Context, st leaseState, sent time.Time) *term {
	t := &term{Term: termOf(st), deadline: sent.Add(e.cfg.RenewDeadline),
		down: make(chan struct{}), done: make(chan struct{})}
	t.ctx, t.cancel = context.WithCancel(context.WithValue(ctx, termKey{e}, t))
	e.mu.Lock()
	e.cur = t
	e.mu.Unlock()
	e.log.LogAttrs(ctx, slog.LevelInfo, "started leading", slog.Int64("epoch", t.Epoch))
	first := t.Term // the goroutine must not read t, which renewals update
	go func() {
		defer close(t.done)
		if f := e.cfg.Callbacks.OnStartedLeading; f != nil {
			f(t.ctx, first)
		}
	}()
	return t
}

// awaitWork waits for t's OnStartedLeading to return, logging when it
// outlives its context by more than RetryPeriod.
func (e *Elector) awaitWork(t *term) {
	timer := e.cfg.Clock.NewTimer(e.cfg.RetryPeriod)
	defer timer.Stop()
	select {
	case <-t.done:
		return
	case <-timer.C:
	}
	e.log.LogAttrs(context.Background(), slog.LevelWarn, "OnStartedLeading has not returned since its context was cancelled",
		slog.Int64("epoch", t.Epoch))
	<-t.done
}

// earliest returns the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// jitter returns a duration from d to (1+JitterFactor)×d.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration(rand.Float64()*JitterFactor*float64(d))
}

// sleep waits for d on the Elector's clock or for ctx, reporting whether d
// passed.
func (e *Elector) sleep(ctx context.Context, d time.Duration) bool {
	timer := e.cfg.Clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
