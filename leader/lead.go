package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// renewal is the outcome of one renew call.
type renewal struct {
	st   leaseState
	err  error
	sent time.Time
}

// renewCall is a renew call running in its own goroutine, so that a hanging
// call never delays a step-down.
type renewCall struct {
	done   chan renewal // receives the outcome, once
	cancel context.CancelFunc
}

// startRenew sends a renewal of epoch, bounded by RetryPeriod and by the
// renew deadline.
func (e *Elector) startRenew(ctx context.Context, epoch int64, deadline time.Time) *renewCall {
	sent := e.cfg.Clock.Now()
	cctx, cancel := context.WithDeadline(ctx, earliest(sent.Add(e.cfg.RetryPeriod), deadline))
	c := &renewCall{done: make(chan renewal, 1), cancel: cancel}
	go func() {
		st, err := e.api.renew(cctx, epoch)
		c.done <- renewal{st: st, err: err, sent: sent}
	}()
	return c
}

// result is the channel of the call's outcome; nil (never ready) for a nil
// call.
func (c *renewCall) result() <-chan renewal {
	if c == nil {
		return nil
	}
	return c.done
}

// abandon cancels a call whose outcome was not received and waits for its
// goroutine to end.
func (c *renewCall) abandon() {
	c.cancel()
	<-c.done
}

// renewed records a successful renewal r in t, with its new step-down
// deadline, and returns the term as it now stands; false when the term
// ended meanwhile.
func (e *Elector) renewed(t *term, r renewal, deadline time.Time) (Term, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t.ended {
		return Term{}, false
	}
	fresh := termOf(r.st)
	t.Token, t.TokenExpiresAt, t.LeaseExpiresAt = fresh.Token, fresh.TokenExpiresAt, fresh.LeaseExpiresAt
	t.deadline = deadline
	return t.Term, true
}

// lead keeps t until it ends, then steps down. It returns a non-nil error
// only when Run must stop: an answer that retrying cannot fix.
func (e *Elector) lead(ctx context.Context, t *term) error {
	e.mu.Lock()
	deadline := t.deadline
	e.mu.Unlock()
	// lastRenew is when the last successful renewal (or the acquire) was
	// sent: the authority's deadline is at least LeaseDuration after it.
	lastRenew := deadline.Add(-e.cfg.RenewDeadline)
	expire := e.cfg.Clock.NewTimer(deadline.Sub(e.cfg.Clock.Now()))
	defer expire.Stop()
	next := e.cfg.Clock.NewTimer(lastRenew.Add(e.cfg.RenewInterval).Sub(e.cfg.Clock.Now()))
	defer next.Stop()

	var (
		call       *renewCall // the call in flight; nil when none
		lastErr    error
		reason     error
		fatal      error
		cancelled  bool
		renewCount int
	)
loop:
	for {
		select {
		case <-ctx.Done():
			reason, cancelled = ctx.Err(), true
			break loop
		case <-t.down:
			break loop
		case <-expire.C:
			reason = e.deadlineReason(lastRenew, lastErr)
			break loop
		case ev := <-e.events:
			if ev.ends(t.Epoch) {
				reason = fmt.Errorf("%w: the lease watch says %s at epoch %d", ErrLeaseLost, ev.Event, ev.Epoch)
				break loop
			}
		case <-next.C:
			call = e.startRenew(ctx, t.Epoch, deadline)
		case r := <-call.result():
			call.cancel()
			call = nil
			now := e.cfg.Clock.Now()
			if !now.Before(deadline) {
				// The timer and the answer raced; the deadline wins.
				reason = e.deadlineReason(lastRenew, lastErr)
				break loop
			}
			if r.err != nil {
				if errors.Is(r.err, ErrLeaseLost) || isFatal(r.err) {
					reason = r.err
					if isFatal(r.err) {
						fatal = r.err
					}
					break loop
				}
				lastErr = r.err
				e.log.LogAttrs(ctx, slog.LevelWarn, "lease renew failed", slog.Int64("epoch", t.Epoch),
					slog.String("error", r.err.Error()), slog.Duration("left", deadline.Sub(now)))
				next.Reset(r.sent.Add(e.cfg.RetryPeriod).Sub(now))
				continue
			}
			lastRenew, lastErr = r.sent, nil
			deadline = r.sent.Add(e.cfg.RenewDeadline)
			snapshot, ok := e.renewed(t, r, deadline)
			if !ok {
				break loop
			}
			renewCount++
			expire.Reset(deadline.Sub(now))
			next.Reset(r.sent.Add(e.cfg.RenewInterval).Sub(now))
			e.log.LogAttrs(ctx, slog.LevelDebug, "lease renewed", slog.Int64("epoch", t.Epoch), slog.Int("renewals", renewCount))
			if f := e.cfg.Callbacks.OnNewToken; f != nil {
				f(snapshot)
			}
		}
	}

	// Step down: stop the Transport and the work first, then talk.
	if !e.end(t, reason) {
		e.mu.Lock()
		reason = t.reason
		e.mu.Unlock()
		cancelled = false
	}
	if call != nil {
		call.cancel()
	}
	if cancelled && e.cfg.ReleaseOnCancel {
		// Release only once the work stopped and no renewal is in flight,
		// so that no one else leads while this term still acts.
		e.awaitWork(t)
		if call != nil {
			call.abandon()
			call = nil
		}
		e.release(ctx, t)
	}
	e.mu.Lock()
	final := t.Term
	e.mu.Unlock()
	level := slog.LevelInfo
	if !cancelled {
		level = slog.LevelWarn
	}
	e.log.LogAttrs(ctx, level, "stopped leading", slog.Int64("epoch", final.Epoch), slog.String("reason", fmt.Sprint(reason)))
	if f := e.cfg.Callbacks.OnStoppedLeading; f != nil {
		f(final, reason)
	}
	if call != nil {
		call.abandon()
	}
	return fatal
}

// deadlineReason is the reason of a step-down on the Elector's own clock.
func (e *Elector) deadlineReason(lastRenew time.Time, lastErr error) error {
	return fmt.Errorf("%w: %w: no renewal succeeded within %s of the last one sent %s ago (last error: %v)",
		ErrLeaseLost, ErrRenewDeadline, e.cfg.RenewDeadline, e.cfg.Clock.Now().Sub(lastRenew).Round(time.Millisecond), lastErr)
}

// release gives the lease of t back, bounded by RetryPeriod.
func (e *Elector) release(ctx context.Context, t *term) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.RetryPeriod)
	defer cancel()
	if err := e.api.release(rctx, t.Epoch); err != nil {
		e.log.LogAttrs(ctx, slog.LevelWarn, "lease release failed", slog.Int64("epoch", t.Epoch), slog.String("error", err.Error()))
		return
	}
	e.log.LogAttrs(ctx, slog.LevelInfo, "lease released", slog.Int64("epoch", t.Epoch))
}
