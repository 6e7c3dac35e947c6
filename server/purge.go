package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// purgeEvery is how often expired idempotency records and old audit
// entries are deleted.
const purgeEvery = time.Minute

// purgeBatch bounds one delete of expired records.
const purgeBatch = 1000

// purgeLoop deletes expired idempotency records from the store every
// purgeEvery, in batches, and the audit entries beyond audit.retention and
// audit.max_entries, until stop closes; then it closes done. Every replica
// purges; concurrent purges delete each entry once.
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
		s.purgeAudit()
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

// purgeAudit deletes the audit entries of both logs that are older than
// audit.retention or beyond audit.max_entries.
func (s *Server) purgeAudit() {
	for _, stream := range []tokens.AuditStream{tokens.AuditRefusals, tokens.AuditLeases} {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.StoreTimeout.D())
		n, err := s.store.PurgeAudit(ctx, stream, s.clock.Now().Add(-s.cfg.Audit.Retention.D()), s.cfg.Audit.MaxEntries)
		cancel()
		if err != nil {
			s.log.LogAttrs(context.Background(), slog.LevelWarn, "purging old audit entries failed",
				slog.String("log", string(stream)), slog.String("error", err.Error()))
		} else if n > 0 {
			s.log.LogAttrs(context.Background(), slog.LevelDebug, "purged old audit entries",
				slog.String("log", string(stream)), slog.Int("entries", n))
		}
	}
}
