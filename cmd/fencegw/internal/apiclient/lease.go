package apiclient

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/fencegw/fencegw/wire"
	"net/http"
	"net/url"
	"time"
)

// The lease operations of the control API.
const (
	OpAcquire = "acquire" // POST /v1/leases/{name}/acquire {"holder","ttl_seconds"}
	OpRenew   = "renew"   // POST /v1/leases/{name}/renew {"holder","epoch"}
	OpRelease = "release" // POST /v1/leases/{name}/release {"holder","epoch"}
	OpGet     = "get"     // GET /v1/leases/{name}
)

// IsLeaseOp reports whether op is one of the lease operations.
func IsLeaseOp(op string) bool {
	switch op {
	case OpAcquire, OpRenew, OpRelease, OpGet:
		return true
	}
	return false
}

// LeaseRequest is what a lease operation sends: Holder, TTL and maybe
// LockDelay for an acquire, Holder and Epoch for a renew or release,
// nothing for a get.
type LeaseRequest struct {
	Holder string
	TTL    time.Duration
	// LockDelay, when set, is the grant's lock-delay; otherwise the
	// gateway's configured lock_delay applies.
	LockDelay *time.Duration
	Epoch     int64
}

// Lease calls lease operation op on the lease name and returns the answer,
// whatever its status.
func (c *Client) Lease(ctx context.Context, op, name string, r LeaseRequest) (Answer, error) {
	path := "/v1/leases/" + url.PathEscape(name)
	switch op {
	case OpAcquire:
		body := map[string]any{"holder": r.Holder, "ttl_seconds": r.TTL.Seconds()}
		if r.LockDelay != nil {
			body["lock_delay_seconds"] = r.LockDelay.Seconds()
		}
		return c.Do(ctx, http.MethodPost, path+"/"+op, body)
	case OpRenew, OpRelease:
		return c.Do(ctx, http.MethodPost, path+"/"+op, map[string]any{"holder": r.Holder, "epoch": r.Epoch})
	case OpGet:
		return c.Do(ctx, http.MethodGet, path, nil)
	}
	return Answer{}, fmt.Errorf("unknown lease operation %q", op)
}

// LeaseState calls lease operation op (acquire, renew or get) and decodes
// the lease from a 200 answer; any other answer is an error naming it.
func (c *Client) LeaseState(ctx context.Context, op, name string, r LeaseRequest) (wire.LeaseState, error) {
	a, err := c.Lease(ctx, op, name, r)
	if err != nil {
		return wire.LeaseState{}, fmt.Errorf("%s: %w", op, err)
	}
	var l wire.LeaseState
	if a.Status != http.StatusOK || json.Unmarshal(a.Body, &l) != nil {
		return wire.LeaseState{}, fmt.Errorf("%s: want 200 with the lease, got %s", op, a)
	}
	return l, nil
}
