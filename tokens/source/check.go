package source

import "github.com/fencegw/fencegw/tokens"

// The reasons Check gives in tokens.StaleEpochError.Reason for an epoch that
// is not below the source's but no longer leads. An epoch below the
// source's carries no reason: a newer leader took over, which Current says.
const (
	// ReasonLapsed: the presented epoch is the leader's, but its lease has
	// lapsed on the source's clock.
	ReasonLapsed = "lease lapsed"
	// ReasonNoLeader: the source has no leader for the resource.
	ReasonNoLeader = "no leader"
)

// Check compares an epoch presented for resource with the leader l read
// from the resource's source, in the domain's verdicts. It returns nil only
// when l.Held, presented equals l.Epoch (0 included: some sources give
// their first leader epoch 0) and l.Live is true. Otherwise it returns:
//
//   - a *tokens.StaleEpochError with Current 0 and Reason ReasonNoLeader
//     when !l.Held, or l.Epoch is negative (a broken source, failed
//     closed), whatever was presented (the source cannot vouch for any
//     epoch);
//   - a *tokens.StaleEpochError with Current l.Epoch and no Reason when
//     presented < l.Epoch (superseded by a newer leader);
//   - a *tokens.EpochNotIssuedError with Issued l.Epoch when
//     presented > l.Epoch, live or not (the source never gave it out);
//   - a *tokens.StaleEpochError with Current l.Epoch and Reason
//     ReasonLapsed when presented == l.Epoch but the lease is not live.
func Check(l Leader, resource string, presented int64) error {
	switch {
	case !l.Held || l.Epoch < 0:
		return &tokens.StaleEpochError{Resource: resource, Presented: presented, Reason: ReasonNoLeader}
	case presented < l.Epoch:
		return &tokens.StaleEpochError{Resource: resource, Presented: presented, Current: l.Epoch}
	case presented > l.Epoch:
		return &tokens.EpochNotIssuedError{Resource: resource, Presented: presented, Issued: l.Epoch}
	case !l.Live:
		return &tokens.StaleEpochError{Resource: resource, Presented: presented, Current: l.Epoch, Reason: ReasonLapsed}
	}
	return nil
}
