package server

import (
	"context"
	"log/slog"
	"time"
)

// purgeEvery is how often expired idempotency records are deleted.
const purgeEvery = time.Minute

// purgeBatch bounds one delete of expired records.
const purgeBatch = 1000

// purgeLoop deletes expired idempotency records from the store every
// purgeEvery, in batches, until stop closes; then it closes done.
func (s *Server) purgeLoop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(purgeEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		for {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.StoreTimeout.D())
			n, err := s.store.PurgeKeys(ctx, purgeBatch)
			cancel()
			if err != nil {
				s.log.LogAttrs(context.Background(), slog.LevelWarn, "purging expired idempotency records failed",
					slog.String("error", err.Error()))
			}
			if err != nil || n < purgeBatch {
				break
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}
}
