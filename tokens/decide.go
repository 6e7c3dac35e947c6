package tokens

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Decision names the outcome of a fencing decision, as spans, metrics, logs
// and the audit record it.
type Decision string

// The decisions.
const (
	// DecisionAdmitted: the write may reach its resource.
	DecisionAdmitted Decision = "admitted"
	// DecisionStale: the epoch is below the resource's HWM, or its epoch
	// source no longer vouches for it.
	DecisionStale Decision = "stale"
	// DecisionMissing: a fenced write carried no token.
	DecisionMissing Decision = "missing"
	// DecisionInvalid: the token or the resource could not be read.
	DecisionInvalid Decision = "invalid"
	// DecisionForged: a signed token failed verification.
	DecisionForged Decision = "forged"
	// DecisionForbidden: an authentic token for another resource, or an
	// epoch above the highest issued.
	DecisionForbidden Decision = "forbidden"
	// DecisionUnavailable: the store or epoch source could not confirm.
	DecisionUnavailable Decision = "unavailable"
)

// ErrNoResource means the write's resource could not be named: the route
// names none, or the request does not say it (unambiguously).
var ErrNoResource = errors.New("resource cannot be determined")

// Presented is what a fenced write presents for a decision, as a front end
// extracted it from its request.
type Presented struct {
	// Tokens are the values of the write's fencing-token fields: one is
	// expected; none (or an empty one) is a missing token.
	Tokens []string
	// Verifier reads the token: raw epochs, signed tokens or either.
	Verifier Verifier
	// Bound reports that the route names its own resource, which a token
	// naming a resource must then agree with.
	Bound bool
	// Resource names the route's resource for this write: from the route
	// itself when Bound, else from the request (raw epochs name none).
	// Its error wraps ErrNoResource or ErrInvalidResource.
	Resource func() (string, error)
	// Source, when set, is the external election whose live epoch a raw
	// epoch must equal.
	Source EpochSource
	// RawOnLeased lets a raw epoch write to a resource this gateway leases
	// (trusting every client of the route); otherwise that is a
	// *RawOnLeasedError.
	RawOnLeased bool
}

// Admission is a write the Fence admitted, or as much of one as was known
// when it was refused (for the refusal's report).
type Admission struct {
	Resource string
	// Epoch is the epoch the verified token carried, when EpochPresented.
	Epoch int64
	// EpochPresented is set once a token verified: Epoch is then the
	// presented epoch, also when it is 0 (which an epoch source may vouch
	// for). False when the decision stopped before (no token, or one that
	// did not verify): then no epoch was presented, whatever Epoch says.
	EpochPresented bool
	Holder         string
	// DeliverBy, for a write on a leased resource, is when its grant at
	// Epoch may lapse, on this process's monotonic clock: the write must
	// be delivered whole before it. The zero Time: no lease bounds it.
	DeliverBy time.Time
}

// Decide is the whole admission rule for one fenced write, in order:
//
//  1. a token must be present (ErrMissingToken) and be one
//     (ErrMalformedToken);
//  2. it must verify: ErrMalformedToken when it cannot be read,
//     ErrUnauthenticated when it is not authentic;
//  3. the resource is the token's, the route's, or the request's
//     (ErrNoResource or ErrInvalidResource when none can be named);
//     a token for another resource than the route's is ErrWrongResource;
//  4. an epoch source, when the route names one, must vouch for the epoch
//     (*StaleEpochError below or lapsed, *EpochNotIssuedError above);
//     epoch 0 (a raw epoch only) is ErrMalformedToken without one, and
//     with one is then fenced like any epoch: never below the HWM;
//  5. the Fence decides (*StaleEpochError, *EpochNotIssuedError), on a
//     leased resource also on the grant's life (see Admission.DeliverBy);
//     a raw epoch on a leased resource is a *RawOnLeasedError unless
//     p.RawOnLeased, decided from memory once the Fence knows the resource
//     leased, whatever the epoch.
//
// Any other error wraps *UnavailableError: the store or the source could
// not confirm, and the write must not proceed. The Admission is filled as
// far as the decision got, also when it refuses.
func (f *Fence) Decide(ctx context.Context, p Presented) (Admission, error) {
	var a Admission
	if len(p.Tokens) == 0 || p.Tokens[0] == "" {
		a.Resource, _ = p.Resource()
		return a, ErrMissingToken
	}
	if len(p.Tokens) > 1 {
		return a, fmt.Errorf("%w: %d tokens, want one", ErrMalformedToken, len(p.Tokens))
	}
	claims, err := p.Verifier.Verify(ctx, p.Tokens[0])
	if err != nil {
		return a, err
	}
	a.Epoch, a.EpochPresented, a.Holder = claims.Epoch, true, claims.Holder
	if a.Resource, err = resourceOf(p, claims); err != nil {
		return a, err
	}
	if a.Epoch == 0 && p.Source == nil {
		return a, fmt.Errorf("%w: epoch must be positive, got 0 (only an epoch source may vouch for epoch 0)", ErrMalformedToken)
	}
	if p.Source != nil {
		if err := p.Source.Check(ctx, a.Resource, a.Epoch); err != nil {
			return a, sourceVerdict(err, a.Resource)
		}
	}
	a.DeliverBy, err = f.admitUnleased(ctx, a.Resource, a.Epoch, p.refusesLeased(claims))
	return a, err
}

// resourceOf names the resource a verified write goes to: a signed token's,
// which must agree with a route that names its own; else the route's or
// the request's.
func resourceOf(p Presented, claims Claims) (string, error) {
	if claims.Resource == "" || p.Bound {
		want, err := p.Resource()
		switch {
		case err != nil:
			return "", err
		case claims.Resource != "" && want != claims.Resource:
			return want, fmt.Errorf("%w: the token is for %q, this route writes to %q", ErrWrongResource, claims.Resource, want)
		}
		return want, ValidateResource(want)
	}
	if err := ValidateResource(claims.Resource); err != nil {
		return "", fmt.Errorf("the token's resource: %w", err)
	}
	return claims.Resource, nil
}

// sourceVerdict keeps an epoch source's verdicts and marks anything else
// as the source failing to answer.
func sourceVerdict(err error, resource string) error {
	var (
		stale     *StaleEpochError
		notIssued *EpochNotIssuedError
		down      *UnavailableError
	)
	if errors.As(err, &stale) || errors.As(err, &notIssued) || errors.As(err, &down) {
		return err
	}
	return &UnavailableError{Op: "epoch source", Resource: resource, Err: err}
}

// DecisionOf names the decision an error of Decide (or Admit) stands for;
// nil is DecisionAdmitted.
func DecisionOf(err error) Decision {
	switch {
	case err == nil:
		return DecisionAdmitted
	case isA[*StaleEpochError](err):
		return DecisionStale
	case errors.Is(err, ErrMissingToken):
		return DecisionMissing
	case errors.Is(err, ErrUnauthenticated):
		return DecisionForged
	case isA[*EpochNotIssuedError](err), errors.Is(err, ErrWrongResource), isA[*RawOnLeasedError](err):
		return DecisionForbidden
	case errors.Is(err, ErrMalformedToken), errors.Is(err, ErrInvalidEpoch), errors.Is(err, ErrInvalidResource),
		errors.Is(err, ErrNoResource):
		return DecisionInvalid
	}
	return DecisionUnavailable
}

// isA reports whether err's chain holds an E (errors.AsType, which does not
// allocate as errors.As with a pointer target does).
func isA[E error](err error) bool {
	_, ok := errors.AsType[E](err)
	return ok
}
