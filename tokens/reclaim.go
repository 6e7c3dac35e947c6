package tokens

import (
	"context"
	"time"
)

// LeaseReclaimer removes the records of ended leases so that a store does
// not grow with every name ever leased. Every store implements it.
type LeaseReclaimer interface {
	// ReclaimLeases deletes the records of at most limit leases that
	// ended (released, or lapsed with their lock-delay over) at least
	// retention ago on the store's clock, and returns how many it deleted.
	// A live lease, or one in its lock-delay, is never reclaimed.
	//
	// What fences stays: the resource's HWM and the highest epoch issued
	// for it are kept, so the name's next grant gets an epoch above every
	// epoch it ever issued, an epoch above the issued one is still refused,
	// and Mark still reports the resource as leased (a grant at the issued
	// epoch, with no life left), so a write at that epoch is refused as
	// lapsed. After a reclaim, Lease answers ErrLeaseNotFound, and a renew
	// or release of the reclaimed grant *LeaseLostError.
	ReclaimLeases(ctx context.Context, retention time.Duration, limit int) (int, error)
}
