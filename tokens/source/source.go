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
	// Epoch is the current leader's epoch (fencing token); 0 when the
	// source has no leader record for the resource. Check treats any
	// Epoch <= 0 as "no leader".
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
