package problem

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// staleProblem answers a stale epoch: below the HWM, or one an epoch
// source no longer vouches for (its reason says why).
func staleProblem(e *tokens.StaleEpochError) Problem {
	// Built by hand: this is the answer a storm of stale writes gets.
	b := make([]byte, 0, 64+len(e.Resource)+len(e.Reason))
	b = strconv.AppendInt(append(b, "epoch "...), e.Presented, 10)
	if e.Reason != "" {
		b = strconv.AppendQuote(append(b, " of "...), e.Resource)
		b = append(append(b, " no longer leads: "...), e.Reason...)
	} else {
		b = strconv.AppendInt(append(b, " is below the current epoch "...), e.Current, 10)
		b = strconv.AppendQuote(append(b, " of "...), e.Resource)
	}
	p := KindStaleEpoch.Problem(string(b))
	p.Resource, p.PresentedEpoch, p.CurrentEpoch = e.Resource, EpochPtr(e.Presented), EpochPtr(e.Current)
	return p
}

// leaseProblem answers a lease store's refusal. None carries a token: a
// token is only ever signed for a grant the caller may use.
func leaseProblem(err error) Problem {
	var (
		held      *tokens.LeaseHeldError
		lost      *tokens.LeaseLostError
		owned     *tokens.LeaseOwnedError
		exhausted *tokens.EpochExhaustedError
		delayed   *tokens.LockDelayError
	)
	switch {
	case errors.As(err, &delayed):
		p := KindLockDelay.Problem(delayed.Error() + "; retry after it ends")
		p.Holder, p.CurrentEpoch = delayed.Holder, EpochPtr(delayed.Epoch)
		p.retryAfter = max(int(math.Ceil(delayed.Left.Seconds())), 1)
		return p
	case errors.As(err, &owned):
		// Not retryable: the grant stays the owner's until it lapses or
		// is released, and this key may not act for it.
		p := KindLeaseOwned.Problem(owned.Error())
		p.Owner = owned.Owner
		return p
	case errors.As(err, &exhausted):
		// Not retryable: no epoch above 2^63-1 exists.
		p := KindEpochExhausted.Problem(exhausted.Error() + "; lease another name")
		p.CurrentEpoch = EpochPtr(exhausted.Epoch)
		return p
	case errors.As(err, &held):
		exp := held.ExpiresAt.UTC()
		p := KindLeaseHeld.Problem(held.Error())
		p.Holder, p.ExpiresAt, p.CurrentEpoch = held.Holder, &exp, EpochPtr(held.Epoch)
		p.retryAfter = max(int(math.Ceil(time.Until(held.ExpiresAt).Seconds())), 1)
		return p
	}
	errors.As(err, &lost)
	p := KindLeaseLost.Problem(lost.Error())
	p.PresentedEpoch = EpochPtr(lost.Epoch)
	if lost.Current.Epoch > 0 {
		p.CurrentEpoch = EpochPtr(lost.Current.Epoch)
		p.Holder = lost.Current.Holder
	}
	return p
}

func bodyTooLargeDetail(e *http.MaxBytesError) string {
	return "the request body exceeds " + strconv.FormatInt(e.Limit, 10) + " bytes"
}
