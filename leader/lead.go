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
	k := e.newKeeping(t)
	defer k.expire.Stop()
	defer k.next.Stop()
	reason, cancelled := k.keep(ctx)
	e.stepDown(ctx, k, reason, cancelled)
	return k.fatal
}

// keeping is the state of one term's renewals while it leads.
type keeping struct {
	e *Elector
	t *term
	// deadline is when the term steps down on the Elector's own clock;
	// lastRenew is when the last successful renewal (or the acquire) was
	// sent: the authority's deadline is at least LeaseDuration after it.
	deadline, lastRenew time.Time
	expire, next        *time.Timer
	call                *renewCall // the call in flight; nil when none
	lastErr             error
	fatal               error // an answer that retrying cannot fix
	renewCount          int
}

func (e *Elector) newKeeping(t *term) *keeping {
	e.mu.Lock()
	deadline := t.deadline
	e.mu.Unlock()
	k := &keeping{e: e, t: t, deadline: deadline, lastRenew: deadline.Add(-e.cfg.RenewDeadline)}
	k.expire = e.cfg.Clock.NewTimer(deadline.Sub(e.cfg.Clock.Now()))
	k.next = e.cfg.Clock.NewTimer(k.lastRenew.Add(e.cfg.RenewInterval).Sub(e.cfg.Clock.Now()))
	return k
}

// keep renews the term until it ends and returns why it ended; cancelled
// is true when ctx ended it.
func (k *keeping) keep(ctx context.Context) (reason error, cancelled bool) {
	e, t := k.e, k.t
	for {
		select {
		case <-ctx.Done():
			return ctx.Err(), true
		case <-t.down:
			return nil, false
		case <-k.expire.C:
			return e.deadlineReason(k.lastRenew, k.lastErr), false
		case ev := <-e.events:
			if ev.ends(t.Epoch) {
				return fmt.Errorf("%w: the lease watch says %s at epoch %d", ErrLeaseLost, ev.Event, ev.Epoch), false
			}
		case <-k.next.C:
			k.call = e.startRenew(ctx, t.Epoch, k.deadline)
		case r := <-k.call.result():
			k.call.cancel()
			k.call = nil
			if reason, stop := k.answered(ctx, r); stop {
				return reason, false
			}
		}
	}
}

// answered acts on the outcome r of a renew call: a renewed term gets its
// new deadline, a failure its retry. stop is true when the term ends, for
// reason.
func (k *keeping) answered(ctx context.Context, r renewal) (reason error, stop bool) {
	e, t := k.e, k.t
	now := e.cfg.Clock.Now()
	if !now.Before(k.deadline) {
		// The timer and the answer raced; the deadline wins.
		return e.deadlineReason(k.lastRenew, k.lastErr), true
	}
	if r.err != nil {
		if isFatal(r.err) {
			k.fatal = r.err
		}
		if errors.Is(r.err, ErrLeaseLost) || isFatal(r.err) {
			return r.err, true
		}
		k.lastErr = r.err
		e.log.LogAttrs(ctx, slog.LevelWarn, "lease renew failed", slog.Int64("epoch", t.Epoch),
			slog.String("error", r.err.Error()), slog.Duration("left", k.deadline.Sub(now)))
		k.next.Reset(r.sent.Add(e.cfg.RetryPeriod).Sub(now))
		return nil, false
	}
	k.lastRenew, k.lastErr = r.sent, nil
	k.deadline = r.sent.Add(e.cfg.RenewDeadline)
	snapshot, ok := e.renewed(t, r, k.deadline)
	if !ok {
		return nil, true
	}
	k.renewCount++
	k.expire.Reset(k.deadline.Sub(now))
	k.next.Reset(r.sent.Add(e.cfg.RenewInterval).Sub(now))
	e.log.LogAttrs(ctx, slog.LevelDebug, "lease renewed", slog.Int64("epoch", t.Epoch), slog.Int("renewals", k.renewCount))
	if f := e.cfg.Callbacks.OnNewToken; f != nil {
		f(snapshot)
	}
	return nil, false
}

// stepDown ends the term k keeps, for reason: it stops the Transport and
// the work first, then talks (a release when ctx ended the term and
// ReleaseOnCancel is set), logs and calls OnStoppedLeading.
func (e *Elector) stepDown(ctx context.Context, k *keeping, reason error, cancelled bool) {
	t, call := k.t, k.call
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
