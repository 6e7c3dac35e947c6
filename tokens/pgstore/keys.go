package pgstore

import (
	"context"
	"fmt"

	"github.com/fencegw/fencegw/tokens"
)

var _ tokens.KeyKeeper = (*Store)(nil)

// KeepKey stores key under name unless a key is stored there already, and
// returns the stored key: the first replica's generated key wins, and every
// replica signs with it.
func (s *Store) KeepKey(ctx context.Context, name string, key []byte) ([]byte, error) {
	if _, err := s.pool.Exec(ctx, s.q.keyKeep, name, key); err != nil {
		return nil, &tokens.UnavailableError{Op: "keep key", Err: err}
	}
	var kept []byte
	if err := s.pool.QueryRow(ctx, s.q.keyGet, name).Scan(&kept); err != nil {
		return nil, &tokens.UnavailableError{Op: "keep key", Err: fmt.Errorf("read back: %w", err)}
	}
	return kept, nil
}
