// Package teststore holds store wrappers that tests of several packages
// share. Only tests import it.
package teststore

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/fencegw/fencegw/tokens"
)

// AuditCounter is a tokens.Store that counts the audit writes reaching it
// (Puts calls of PutAudit, Entries entries in them) and, while Down is
// set, fails them with a tokens.UnavailableError without counting them.
// Every other method is its Store's.
type AuditCounter struct {
	tokens.Store
	Puts, Entries atomic.Int64
	Down          atomic.Bool
}

// PutAudit counts es and writes them to the wrapped store, or fails while
// Down.
func (s *AuditCounter) PutAudit(ctx context.Context, es []tokens.AuditEntry) error {
	if s.Down.Load() {
		return &tokens.UnavailableError{Op: "audit", Err: errors.New("store down (test)")}
	}
	s.Puts.Add(1)
	s.Entries.Add(int64(len(es)))
	return s.Store.PutAudit(ctx, es)
}
