package tokens

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Caller identifies who asks for a lease operation: the credential the
// request was authenticated with, if any. It is passed to every lease change
// so that the store can decide ownership in the same atomic step as the
// change itself.
//
// The zero Caller is an anonymous, non-admin caller: it may use unowned
// leases, which are the only leases it creates, so a deployment that never
// names callers behaves as if leases had no owners.
type Caller struct {
	// Name names the caller's credential (an API key's name, never its
	// secret). Acquire records it as the grant's Owner. Empty for callers
	// that are not authenticated.
	Name string
	// Admin callers may renew, release and re-acquire any lease whatever
	// its owner. A grant to an admin is owned by the admin's Name.
	Admin bool
}

// MayUse reports whether c may renew, release or re-acquire (with the same
// holder) a grant owned by owner: when c is an admin, the grant is unowned
// (owner is empty), or owner is c's Name.
func (c Caller) MayUse(owner string) bool {
	return c.Admin || owner == "" || owner == c.Name
}

// MaxOwnerLen is the longest caller (owner) name, in bytes.
const MaxOwnerLen = 256

// ValidateOwner reports whether name may name a caller and so a lease's
// owner: empty (anonymous), or at most MaxOwnerLen bytes of valid UTF-8
// without control characters. An invalid name returns an error wrapping
// ErrInvalidLease.
func ValidateOwner(name string) error {
	if len(name) > MaxOwnerLen {
		return fmt.Errorf("%w: caller name longer than %d bytes", ErrInvalidLease, MaxOwnerLen)
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%w: caller name is not valid UTF-8", ErrInvalidLease)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: caller name contains control character %U", ErrInvalidLease, r)
		}
	}
	return nil
}

// LeaseOwnedError reports a renew, release or same-holder acquire refused
// because the grant it names is owned by another caller. Nothing was
// changed. It is decided after the lease was found to be the one the caller
// named (holder and epoch for renew and release, a live grant to the same
// holder for acquire): a caller whose grant was superseded gets
// *LeaseLostError or *LeaseHeldError instead.
type LeaseOwnedError struct {
	Name   string // the lease
	Owner  string // the Name of the caller that acquired the grant
	Caller string // the refused caller's Name ("" when anonymous)
	Op     string // "acquire", "renew" or "release"
}

func (e *LeaseOwnedError) Error() string {
	who := fmt.Sprintf("%q", e.Caller)
	if e.Caller == "" {
		who = "an anonymous caller"
	}
	return fmt.Sprintf("lease %q is owned by %q: %s may not %s it", e.Name, e.Owner, who, e.Op)
}
