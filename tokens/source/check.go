package source

import "fmt"

// StaleReason says why a presented epoch was refused as stale.
type StaleReason string

// The reasons a *StaleError carries.
const (
	// ReasonSuperseded: the presented epoch is below the leader's epoch; a
	// newer leader took over.
	ReasonSuperseded StaleReason = "superseded"
	// ReasonLapsed: the presented epoch is the leader's, but its lease has
	// lapsed on the source's clock.
	ReasonLapsed StaleReason = "lease lapsed"
	// ReasonNoLeader: the source has no leader for the resource.
	ReasonNoLeader StaleReason = "no leader"
)

// StaleError refuses a presented epoch that no longer leads: it is below
// the leader's epoch, or it is the leader's epoch but the lease lapsed, or
// the source has no leader at all. Callers answer 412. Current is the
// source's epoch (0 when there is no leader).
type StaleError struct {
	Resource  string
	Presented int64
	Current   int64
	Reason    StaleReason
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("stale epoch for %q: presented %d, epoch source has %d (%s)",
		e.Resource, e.Presented, e.Current, e.Reason)
}

// AheadError refuses a presented epoch above the source's current epoch:
// the source never issued it to a leader. Callers answer 403, and such an
// epoch must never raise a high-water mark.
type AheadError struct {
	Resource  string
	Presented int64
	Current   int64
}

func (e *AheadError) Error() string {
	return fmt.Sprintf("epoch for %q not issued by the epoch source: presented %d, source has %d",
		e.Resource, e.Presented, e.Current)
}

// Check compares an epoch presented for resource with the leader l read
// from the resource's source. It returns nil only when presented equals
// l.Epoch, l.Epoch is positive and l.Live is true. Otherwise it returns:
//
//   - a *StaleError with ReasonNoLeader when l.Epoch <= 0, whatever was
//     presented (the source cannot vouch for any epoch);
//   - a *StaleError with ReasonSuperseded when presented < l.Epoch;
//   - an *AheadError when presented > l.Epoch, live or not;
//   - a *StaleError with ReasonLapsed when presented == l.Epoch but the
//     lease is not live.
func Check(l Leader, resource string, presented int64) error {
	switch {
	case l.Epoch <= 0:
		return &StaleError{Resource: resource, Presented: presented, Current: 0, Reason: ReasonNoLeader}
	case presented < l.Epoch:
		return &StaleError{Resource: resource, Presented: presented, Current: l.Epoch, Reason: ReasonSuperseded}
	case presented > l.Epoch:
		return &AheadError{Resource: resource, Presented: presented, Current: l.Epoch}
	case !l.Live:
		return &StaleError{Resource: resource, Presented: presented, Current: l.Epoch, Reason: ReasonLapsed}
	}
	return nil
}
