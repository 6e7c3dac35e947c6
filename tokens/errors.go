package tokens

import (
	"errors"
	"fmt"
)

var (
	// ErrMissingToken means a write that must be fenced carried no token.
	ErrMissingToken = errors.New("fencing token missing")
	// ErrMalformedToken means a token could not be parsed at all.
	ErrMalformedToken = errors.New("malformed fencing token")
	// ErrInvalidEpoch means an epoch outside the legal range (a positive int64)
	// was handed to a store or fence.
	ErrInvalidEpoch = errors.New("invalid epoch")
	// ErrInvalidResource means a resource name is empty, too long or holds
	// characters fencegw does not accept.
	ErrInvalidResource = errors.New("invalid resource name")
)

// StaleEpochError reports a write whose epoch is below the resource's
// high-water mark. Current is the HWM that beat it (a lower bound when it
// came from a replica's cache; the HWM only grows).
type StaleEpochError struct {
	Resource  string
	Presented int64
	Current   int64
	// Reason, when set, says why an epoch not below Current is stale
	// (an epoch source's lapsed lease, or no leader).
	Reason string
}

func (e *StaleEpochError) Error() string {
	return fmt.Sprintf("stale epoch for %q: presented %d, current %d", e.Resource, e.Presented, e.Current)
}

// UnavailableError reports that the store could not confirm an operation:
// the outcome is unknown and the caller must fail closed.
type UnavailableError struct {
	Op       string
	Resource string
	Err      error
}

func (e *UnavailableError) Error() string {
	if e.Resource == "" {
		return fmt.Sprintf("store unavailable: %s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("store unavailable: %s %q: %v", e.Op, e.Resource, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// IsVerdict reports whether err is a definite answer about the request, a
// refusal after which nothing changed, rather than a failure to answer:
// every admission refusal DecisionOf names (stale, missing, invalid,
// forged, forbidden), and every refusal of a lease operation (a
// *LeaseHeldError, *LeaseLostError, *LeaseOwnedError, *EpochExhaustedError,
// *LockDelayError,
// ErrLeaseNotFound, ErrInvalidLease). Any other error, an *UnavailableError
// above all, leaves the outcome unknown. nil is not a verdict.
func IsVerdict(err error) bool {
	if err == nil {
		return false
	}
	var (
		held      *LeaseHeldError
		lost      *LeaseLostError
		owned     *LeaseOwnedError
		exhausted *EpochExhaustedError
		delayed   *LockDelayError
	)
	return DecisionOf(err) != DecisionUnavailable || errors.As(err, &held) || errors.As(err, &lost) ||
		errors.As(err, &owned) || errors.As(err, &exhausted) || errors.As(err, &delayed) || errors.Is(err, ErrLeaseNotFound) ||
		errors.Is(err, ErrInvalidLease)
}
