package source

import (
	"context"
	"errors"

	"github.com/fencegw/fencegw/tokens"
)

// ErrClosed is wrapped by the error Current returns on a Source that has
// been closed.
var ErrClosed = errors.New("epoch source closed")

// Leader is what a source says about a resource's current leader.
type Leader struct {
	// Held reports that the source has a leader record for the resource
	// (live or lapsed). It alone says whether there is a leader: Check
	// treats !Held as "no leader", whatever Epoch says, because some
	// sources give their first leader epoch 0 (a Kubernetes Lease's
	// leaseTransitions). Every source sets it whenever it reports a
	// leader; the zero Leader is "no leader".
	Held bool
	// Epoch is the current leader's epoch (fencing token), meaningful only
	// when Held: 0 or more. A source whose records hold a negative epoch
	// must not report them as held.
	Epoch int64
	// Holder names the leader when the source knows it; it is informative
	// only and never decides an admission.
	Holder string
	// Live reports that the leader's lease has not lapsed, on the source's
	// own clock. Sources without expiry report true whenever a leader
	// exists.
	Live bool
}

// Source is an external election.
//
// Current returns what the election says about resource at some instant
// between the call and its return: it must be a linearizable, fresh read
// (never a cache, never a replica), because fencing depends on it. A
// resource the source knows nothing about yields Leader{} and a nil error.
// Any error wraps a *tokens.UnavailableError: the leader could not be
// confirmed, and the caller must fail closed. Current must be safe for
// concurrent use.
//
// Close releases the source's resources; Current then fails with an error
// wrapping ErrClosed. Close is safe to call more than once.
//
// Package sourcetest is the contract suite every Source must pass.
type Source interface {
	Current(ctx context.Context, resource string) (Leader, error)
	Close() error
}

// Unavailable returns err as a source's failure to say who leads resource:
// err itself when it already wraps a *tokens.UnavailableError, otherwise a
// *tokens.UnavailableError for the operation "epoch source" wrapping err.
func Unavailable(resource string, err error) error {
	var u *tokens.UnavailableError
	if errors.As(err, &u) {
		return err
	}
	return &tokens.UnavailableError{Op: "epoch source", Resource: resource, Err: err}
}
