package problem

import (
	"errors"
	"math"
	"net/http"

	"github.com/fencegw/fencegw/wire"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// Problem types, one per kind of answer the gateway gives itself.
const (
	TypeStaleEpoch       = "urn:fencegw:problem:stale-epoch"
	TypeTokenRequired    = "urn:fencegw:problem:token-required"
	TypeMalformedToken   = "urn:fencegw:problem:malformed-token"
	TypeBadResource      = "urn:fencegw:problem:bad-resource"
	TypeBadPath          = "urn:fencegw:problem:bad-path"
	TypeBadMethod        = "urn:fencegw:problem:bad-method"
	TypeNoRoute          = "urn:fencegw:problem:no-route"
	TypeStoreUnavailable = "urn:fencegw:problem:store-unavailable"
	TypeUpstreamFailed   = "urn:fencegw:problem:upstream-unavailable"
	TypeUpstreamTimeout  = "urn:fencegw:problem:upstream-timeout"
	TypeBodyTooLarge     = "urn:fencegw:problem:body-too-large"
	TypeNotFound         = "urn:fencegw:problem:not-found"
	TypeMethodNotAllowed = "urn:fencegw:problem:method-not-allowed"
	TypeUnauthenticated  = "urn:fencegw:problem:unauthenticated-token"
	TypeWrongResource    = "urn:fencegw:problem:wrong-resource"
	TypeEpochNotIssued   = "urn:fencegw:problem:epoch-not-issued"
	TypeLeaseHeld        = "urn:fencegw:problem:lease-held"
	TypeLeaseLost        = "urn:fencegw:problem:lease-lost"
	TypeLeaseOwned       = "urn:fencegw:problem:lease-owned"
	TypeEpochExhausted   = "urn:fencegw:problem:epoch-exhausted"
	// TypeLockDelay (409): the lease's last grant lapsed without a release
	// less than its lock-delay ago; Retry-After says when it ends.
	TypeLockDelay = "urn:fencegw:problem:lock-delay"
	// TypeSuperseded (412): the write was admitted, but a write at a newer
	// epoch to the same resource was admitted through this replica before
	// it was forwarded; nothing of it was forwarded.
	TypeSuperseded = "urn:fencegw:problem:superseded"
	// TypeIdemKeyBad (400): a route that requires an Idempotency-Key got
	// none, or the key is malformed.
	TypeIdemKeyBad = "urn:fencegw:problem:bad-idempotency-key"
	// TypeIdemKeyReused (422): the key was first used with another request.
	TypeIdemKeyReused = "urn:fencegw:problem:idempotency-key-reused"
	// TypeIdemInFlight (409): the key's first write is still on its way.
	TypeIdemInFlight = "urn:fencegw:problem:idempotency-in-flight"
	// TypeIdemNotReplayable (409): the key's write was forwarded, and its
	// outcome is unknown or its answer was too long to keep.
	TypeIdemNotReplayable = "urn:fencegw:problem:idempotency-not-replayable"
	TypeBadRequest        = "urn:fencegw:problem:bad-request"
	TypeUnauthorized      = "urn:fencegw:problem:unauthorized"
	TypeForbidden         = "urn:fencegw:problem:forbidden"
	TypeInternal          = "urn:fencegw:problem:internal"
	TypeDraining          = "urn:fencegw:problem:draining"
	// TypeBadFraming (400): the request broke HTTP/1.1 message framing
	// (Content-Length with Transfer-Encoding, several Content-Lengths, bare
	// LF or CR, obs-fold, a bad chunk...); nothing of it was forwarded.
	TypeBadFraming = "urn:fencegw:problem:bad-framing"
	// TypeHeaderTooLarge (431): the request head exceeds max_header_bytes
	// plus 4 KiB.
	TypeHeaderTooLarge = "urn:fencegw:problem:header-too-large"
	// TypeUnsupportedCoding (501): a Transfer-Encoding other than chunked.
	TypeUnsupportedCoding = "urn:fencegw:problem:unsupported-transfer-coding"
	// TypeTooManyWatchers (503): the process serves watch.max_watchers
	// lease watches already; Retry-After says when to try again.
	TypeTooManyWatchers = "urn:fencegw:problem:too-many-watchers"
	// TypeMisdirected (421): the control API's Host header is not a name
	// of it (DNS rebinding); see BrowserOptions.
	TypeMisdirected = "urn:fencegw:problem:misdirected"
	// TypeCrossOrigin (403): the request came from a web page of another
	// origin; see BrowserOptions.
	TypeCrossOrigin = "urn:fencegw:problem:cross-origin"
	// TypeUnsupportedMedia (415): a control API request that changes state
	// did not send its body as application/json.
	TypeUnsupportedMedia = "urn:fencegw:problem:unsupported-media-type"
	// TypeLeaseQuota (429): the acquire would make one live lease more
	// than the API key's max_leases or leases.max_live allows; a release
	// or a lapse frees a slot. Retry-After says when the count is next read.
	TypeLeaseQuota = "urn:fencegw:problem:lease-quota"
)

// Kind is one entry of the problem catalogue: a kind of answer the
// gateway gives itself. Its type, title and status never vary; the detail
// and the extension members come from the error being answered.
type Kind struct {
	Type   string
	Title  string
	Status int
	// Decision is the fencing decision this answer reports when it refuses
	// a fenced write; empty for answers that are not fencing decisions.
	Decision tokens.Decision
	// RetryAfter, when positive, is the Retry-After it sends, in seconds
	// (a lease-held answer computes its own).
	RetryAfter int
}

// The catalogue. Every answer the gateway gives itself is one of these.
var (
	KindStaleEpoch = Kind{TypeStaleEpoch, "Stale fencing epoch", http.StatusPreconditionFailed, tokens.DecisionStale, 0}
	KindSuperseded = Kind{TypeSuperseded, "Superseded before forwarding", http.StatusPreconditionFailed, tokens.DecisionStale, 0}

	KindIdemKeyBad        = Kind{TypeIdemKeyBad, "Idempotency-Key missing or malformed", http.StatusBadRequest, "", 0}
	KindIdemKeyReused     = Kind{TypeIdemKeyReused, "Idempotency-Key reused for another request", http.StatusUnprocessableEntity, "", 0}
	KindIdemInFlight      = Kind{TypeIdemInFlight, "Write with this Idempotency-Key in flight", http.StatusConflict, "", 1}
	KindIdemNotReplayable = Kind{TypeIdemNotReplayable, "Write with this Idempotency-Key cannot be replayed", http.StatusConflict, "", 0}
	KindTokenRequired     = Kind{TypeTokenRequired, "Fencing token required", http.StatusPreconditionRequired, tokens.DecisionMissing, 0}
	KindMalformedToken    = Kind{TypeMalformedToken, "Malformed fencing token", http.StatusBadRequest, tokens.DecisionInvalid, 0}
	KindUnauthenticated   = Kind{TypeUnauthenticated, "Fencing token not authentic", http.StatusUnauthorized, tokens.DecisionForged, 0}
	KindWrongResource     = Kind{TypeWrongResource, "Token issued for another resource", http.StatusForbidden, tokens.DecisionForbidden, 0}
	KindEpochNotIssued    = Kind{TypeEpochNotIssued, "Epoch was never issued", http.StatusForbidden, tokens.DecisionForbidden, 0}
	KindRawOnLeased       = Kind{TypeRawOnLeased, "Signed token required for a leased resource", http.StatusForbidden, tokens.DecisionForbidden, 0}
	KindBadResource       = Kind{TypeBadResource, "Resource cannot be determined", http.StatusBadRequest, tokens.DecisionInvalid, 0}
	KindStoreUnavailable  = Kind{TypeStoreUnavailable, "Fencing store unavailable", http.StatusServiceUnavailable, tokens.DecisionUnavailable, 1}

	KindBadPath       = Kind{TypeBadPath, "Request path is not clean", http.StatusBadRequest, "", 0}
	KindBadMethod     = Kind{TypeBadMethod, "Request method is ambiguous", http.StatusBadRequest, "", 0}
	KindNoRoute       = Kind{TypeNoRoute, "No route serves this path", http.StatusNotFound, "", 0}
	KindBodyTooLarge  = Kind{TypeBodyTooLarge, "Request body too large", http.StatusRequestEntityTooLarge, "", 0}
	KindBadFraming    = Kind{TypeBadFraming, "Request framing is invalid", http.StatusBadRequest, "", 0}
	KindHeadTooLarge  = Kind{TypeHeaderTooLarge, "Request head too large", http.StatusRequestHeaderFieldsTooLarge, "", 0}
	KindCodingUnknown = Kind{TypeUnsupportedCoding, "Transfer coding not implemented", http.StatusNotImplemented, "", 0}
	KindUpstream      = Kind{TypeUpstreamFailed, "Upstream unavailable", http.StatusBadGateway, "", 0}
	KindUpstreamSlow  = Kind{TypeUpstreamTimeout, "Upstream timed out", http.StatusGatewayTimeout, "", 0}

	KindLeaseHeld      = Kind{TypeLeaseHeld, "Lease held by another holder", http.StatusConflict, "", 0}
	KindLeaseLost      = Kind{TypeLeaseLost, "Lease not held", http.StatusConflict, "", 0}
	KindLeaseOwned     = Kind{TypeLeaseOwned, "Lease owned by another API key", http.StatusForbidden, "", 0}
	KindEpochExhausted = Kind{TypeEpochExhausted, "Epoch space exhausted", http.StatusConflict, "", 0}
	KindLockDelay      = Kind{TypeLockDelay, "Lease in its lock-delay", http.StatusConflict, "", 0}
	KindNotFound       = Kind{TypeNotFound, "Not found", http.StatusNotFound, "", 0}
	KindNotAllowed     = Kind{TypeMethodNotAllowed, "Method not allowed", http.StatusMethodNotAllowed, "", 0}
	KindBadRequest     = Kind{TypeBadRequest, "Bad request", http.StatusBadRequest, "", 0}
	KindUnauthorized   = Kind{TypeUnauthorized, "API key required", http.StatusUnauthorized, "", 0}
	KindForbidden      = Kind{TypeForbidden, "API key not allowed here", http.StatusForbidden, "", 0}
	KindInternal       = Kind{TypeInternal, "Internal error", http.StatusInternalServerError, "", 0}
	KindDraining       = Kind{TypeDraining, "Shutting down", http.StatusServiceUnavailable, "", 1}

	KindTooManyWatchers  = Kind{TypeTooManyWatchers, "Too many lease watches", http.StatusServiceUnavailable, "", 5}
	KindMisdirected      = Kind{TypeMisdirected, "Host not served here", http.StatusMisdirectedRequest, "", 0}
	KindCrossOrigin      = Kind{TypeCrossOrigin, "Cross-origin request refused", http.StatusForbidden, "", 0}
	KindUnsupportedMedia = Kind{TypeUnsupportedMedia, "Body must be application/json", http.StatusUnsupportedMediaType, "", 0}
	KindLeaseQuota       = Kind{TypeLeaseQuota, "Too many live leases", http.StatusTooManyRequests, "", 1}
)

// Kinds returns the whole catalogue (openapi.yaml is checked
// against it).
func Kinds() []Kind {
	return []Kind{KindStaleEpoch, KindSuperseded, KindIdemKeyBad, KindIdemKeyReused, KindIdemInFlight, KindIdemNotReplayable, KindTokenRequired, KindMalformedToken, KindUnauthenticated, KindWrongResource,
		KindEpochNotIssued, KindBadResource, KindStoreUnavailable, KindBadPath, KindBadMethod, KindNoRoute, KindBodyTooLarge,
		KindBadFraming, KindHeadTooLarge, KindCodingUnknown, KindUpstream, KindUpstreamSlow, KindLeaseHeld, KindLeaseLost,
		KindLeaseOwned, KindEpochExhausted, KindLockDelay, KindNotFound, KindNotAllowed, KindBadRequest, KindUnauthorized, KindForbidden,
		KindInternal, KindDraining, KindTooManyWatchers, KindRawOnLeased, KindMisdirected, KindCrossOrigin, KindUnsupportedMedia,
		KindLeaseQuota}
}

// answer is an error the gateway answers with a kind of its own choosing
// (a refusal no domain error names: no route, a bad body, a key not
// allowed), with its detail.
type answer struct {
	kind   Kind
	detail string
	cause  error
}

func (e *answer) Error() string { return e.detail }
func (e *answer) Unwrap() error { return e.cause }

// ErrNoAPIKey answers a control API call without a valid key.
var ErrNoAPIKey = Refuse(KindUnauthorized, "send a valid API key as Authorization: Bearer <key>")

// Refuse returns an error answered with kind and detail.
func Refuse(kind Kind, detail string) error { return &answer{kind: kind, detail: detail} }

// RefuseCause is refuse with the failure behind it, logged, never sent.
func RefuseCause(kind Kind, detail string, cause error) error {
	return &answer{kind: kind, detail: detail, cause: cause}
}

// Problem returns the problem document of kind with detail.
func (k Kind) Problem(detail string) Problem {
	return Problem{Problem: wire.Problem{Type: k.Type, Title: k.Title, Status: k.Status, Detail: detail}, retryAfter: k.RetryAfter, kind: k}
}

// Of is the one function from an error to the answer: the
// catalogue entry its type selects, with the detail and the extension
// members the error carries. Callers add what only they know (the route,
// the lease name). An error that is no verdict and no refusal is a
// failure to confirm: 503, with the error kept as the logged cause.
func Of(err error) Problem {
	if a, ok := errors.AsType[*answer](err); ok {
		p := a.kind.Problem(a.detail)
		p.Cause = a.cause
		return p
	}
	if fe, ok := errors.AsType[*FramingError](err); ok {
		return framingProblem(fe)
	}
	if tooLarge, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return KindBodyTooLarge.Problem(bodyTooLargeDetail(tooLarge))
	}
	if stale, ok := errors.AsType[*tokens.StaleEpochError](err); ok {
		return staleProblem(stale)
	}
	if notIssued, ok := errors.AsType[*tokens.EpochNotIssuedError](err); ok {
		p := KindEpochNotIssued.Problem(notIssued.Error())
		p.Resource, p.PresentedEpoch, p.CurrentEpoch = notIssued.Resource, EpochPtr(notIssued.Presented), EpochPtr(notIssued.Issued)
		return p
	}
	if quota, ok := errors.AsType[*tokens.LeaseQuotaError](err); ok {
		p := KindLeaseQuota.Problem(quota.Error() + "; release a lease or retry later")
		p.retryAfter = max(int(math.Ceil(quota.RetryAfter.Seconds())), 1)
		return p
	}
	if leased, ok := errors.AsType[*tokens.RawOnLeasedError](err); ok {
		p := KindRawOnLeased.Problem(leased.Error())
		p.Resource = leased.Resource
		return p
	}
	switch {
	case IsA[*tokens.LeaseHeldError](err), IsA[*tokens.LeaseLostError](err), IsA[*tokens.LeaseOwnedError](err),
		IsA[*tokens.EpochExhaustedError](err), IsA[*tokens.LockDelayError](err):
		return leaseProblem(err)
	case errors.Is(err, policy.ErrBadMethod):
		return KindBadMethod.Problem(err.Error())
	case errors.Is(err, policy.ErrUncleanPath):
		return KindBadPath.Problem(err.Error())
	case errors.Is(err, tokens.ErrLeaseNotFound):
		return KindNotFound.Problem(err.Error())
	case errors.Is(err, tokens.ErrMissingToken):
		return KindTokenRequired.Problem("this write is fenced: send the epoch in the " + wire.TokenHeader + " header")
	case errors.Is(err, tokens.ErrUnauthenticated):
		return KindUnauthenticated.Problem(err.Error())
	case errors.Is(err, tokens.ErrMalformedToken), errors.Is(err, tokens.ErrInvalidEpoch):
		return KindMalformedToken.Problem(err.Error())
	case errors.Is(err, tokens.ErrWrongResource):
		return KindWrongResource.Problem(err.Error())
	case errors.Is(err, tokens.ErrNoResource), errors.Is(err, tokens.ErrInvalidResource):
		return KindBadResource.Problem(err.Error())
	case errors.Is(err, tokens.ErrInvalidLease):
		return KindBadRequest.Problem(err.Error())
	}
	p := KindStoreUnavailable.Problem("the store could not confirm; nothing was done or forwarded")
	p.Cause = err
	return p
}

// IsA reports whether err's chain holds an E, without the allocation of
// errors.As's pointer target.
func IsA[E error](err error) bool {
	_, ok := errors.AsType[E](err)
	return ok
}

// TypeRawOnLeased (403): a raw epoch for a resource this gateway leases, on
// a route that does not allow it; the detail names a signed route to use
// when one serves the resource.
const TypeRawOnLeased = "urn:fencegw:problem:raw-on-leased"

// FramingError is a violation of HTTP/1.1 message framing (RFC 9112) found
// in the bytes a client sent on one connection. Nothing of the request it
// was found in may be forwarded, and nothing after it on that connection
// can be trusted: the connection is answered and closed.
type FramingError struct {
	// Status is the answer: 400 Bad Request, 431 Request Header Fields Too
	// Large for a head over the limit, or 501 Not Implemented for a transfer
	// coding other than chunked.
	Status int
	// Detail says what was wrong. It quotes at most a short, escaped
	// snippet of what the client sent.
	Detail string
}

func (e *FramingError) Error() string { return "request framing: " + e.Detail }

// framingProblem answers a request that broke HTTP/1.1 framing, by status.
func framingProblem(fe *FramingError) Problem {
	switch fe.Status {
	case http.StatusRequestHeaderFieldsTooLarge:
		return KindHeadTooLarge.Problem(fe.Detail)
	case http.StatusNotImplemented:
		return KindCodingUnknown.Problem(fe.Detail)
	}
	return KindBadFraming.Problem(fe.Detail)
}
