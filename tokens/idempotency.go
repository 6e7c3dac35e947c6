package tokens

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// IdemState is the state of an idempotency record.
type IdemState string

// The states of an idempotency record.
const (
	// IdemPending: a replica claimed the key and may be forwarding the
	// write; the claim names it.
	IdemPending IdemState = "pending"
	// IdemDone: the write was forwarded once and the upstream answered;
	// the answer is kept.
	IdemDone IdemState = "done"
	// IdemUnknown: the write was forwarded (maybe in part) and no answer
	// came back: it may or may not have taken effect. It is never
	// forwarded again while the record lasts.
	IdemUnknown IdemState = "unknown"
)

// IdemRecord is what the store keeps for one (resource, Idempotency-Key).
type IdemRecord struct {
	// Fingerprint identifies the request the key was first used with
	// (method, path, query, body digest), hex. The body streams to the
	// upstream as it arrives, so its digest is known only at its end:
	// empty in a pending record, and in a settled one whose body could not
	// be read whole.
	Fingerprint string `json:"fingerprint"`
	// Request identifies the request without its body (method, path,
	// query), hex: known from the claim on. Empty in records written
	// before it existed.
	Request string    `json:"request,omitempty"`
	State   IdemState `json:"state"`
	// Claim is the random name of the claim that created the record.
	Claim string `json:"claim"`
	// ClaimedAt is when the claim was made, on the claiming replica's
	// clock: how long a pending record has been in flight.
	ClaimedAt time.Time `json:"claimed_at"`
	// Answer is the upstream's answer, when State is IdemDone.
	Answer *IdemAnswer `json:"answer,omitempty"`
}

// IdemAnswer is an upstream's answer as kept for replays.
type IdemAnswer struct {
	Status int                 `json:"status"`
	Header map[string][]string `json:"header,omitempty"`
	Body   []byte              `json:"body,omitempty"`
	// Truncated reports that the body was longer than the gateway keeps:
	// the answer cannot be replayed.
	Truncated bool `json:"truncated,omitempty"`
}

// IdempotencyStore keeps idempotency records in the fencing store, shared
// by every replica and kept across restarts. A record expires ttl after its
// claim; expired records are deleted by PurgeKeys (or by the store itself).
type IdempotencyStore interface {
	// ClaimKey creates rec (a pending record) for resource and key in one
	// atomic step unless a record is there, and returns the record that is
	// there now and whether this call created it. Concurrent claims through
	// any replicas create one record.
	ClaimKey(ctx context.Context, resource, key string, rec IdemRecord, ttl time.Duration) (IdemRecord, bool, error)
	// SettleKey replaces the pending record of resource and key created by
	// claim with rec (IdemDone or IdemUnknown), or deletes it when rec is
	// nil: nothing was forwarded, and the key may be used again. When the
	// record is gone or is not claim's pending record, it changes nothing
	// and returns ErrClaimLost.
	SettleKey(ctx context.Context, resource, key, claim string, rec *IdemRecord) error
	// PurgeKeys deletes up to limit expired records and returns how many it
	// deleted.
	PurgeKeys(ctx context.Context, limit int) (int, error)
	// ForgetKey deletes the record of resource and key, whatever its state,
	// and reports whether there was one: an operator's decision that the
	// write may be sent again (after checking that an unknown outcome did
	// not take effect).
	ForgetKey(ctx context.Context, resource, key string) (bool, error)
}

// ErrClaimLost means an idempotency record is no longer the pending record
// of the claim that settles it (it expired and was claimed again).
var ErrClaimLost = errors.New("idempotency claim lost")

// ErrInvalidIdemKey means an Idempotency-Key is empty, too long or not
// printable ASCII.
var ErrInvalidIdemKey = errors.New("invalid Idempotency-Key")

// MaxIdemKeyLen is the longest Idempotency-Key, in bytes.
const MaxIdemKeyLen = 255

// ValidateIdemKey checks a key: 1 to MaxIdemKeyLen printable ASCII bytes.
func ValidateIdemKey(key string) error {
	if key == "" || len(key) > MaxIdemKeyLen {
		return fmt.Errorf("%w: it must be 1 to %d bytes, got %d", ErrInvalidIdemKey, MaxIdemKeyLen, len(key))
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("%w: printable ASCII only, got byte %#x at %d", ErrInvalidIdemKey, c, i)
		}
	}
	return nil
}
