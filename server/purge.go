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
// their class's max_entries, until stop closes; then it closes done. Every
// replica purges; concurrent purges delete each entry once.
func (s *Server) purgeLoop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	everyTick(stop, purgeEvery, func() bool {
		s.purgeAudit(stop)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.StoreTimeout.D())
			n, err := s.store.PurgeKeys(ctx, purgeBatch)
			cancel()
			if err != nil {
				s.log.LogAttrs(context.Background(), slog.LevelWarn, "purging expired idempotency records failed",
					slog.String("error", err.Error()))
			}
			if err != nil || n < purgeBatch {
				return true
			}
			select {
			case <-stop:
				return false
			default:
			}
		}
	})
}

// auditPurgePause is how long the audit purge leaves the store's writer
// free between two batches, so that lease and HWM writes queued behind a
// batch go first.
const auditPurgePause = 5 * time.Millisecond

// purgeAudit deletes the audit entries of every log that are older than
// audit.retention or beyond their class's max_entries, tokens.AuditBatch
// at a time, pausing between batches, until stop closes.
func (s *Server) purgeAudit(stop <-chan struct{}) {
	before := s.clock.Now().Add(-s.cfg.Audit.Retention.D())
	for _, stream := range tokens.AuditStreams() {
		keep := s.cfg.Audit.History.MaxEntries
		if stream == tokens.AuditJunk {
			keep = s.cfg.Audit.Junk.MaxEntries
		}
		n, err := s.purgeAuditStream(stop, stream, before, keep)
		if err != nil {
			s.log.LogAttrs(context.Background(), slog.LevelWarn, "purging old audit entries failed",
				slog.String("log", string(stream)), slog.Int("deleted", n), slog.String("error", err.Error()))
		} else if n > 0 {
			s.log.LogAttrs(context.Background(), slog.LevelDebug, "purged old audit entries",
				slog.String("log", string(stream)), slog.Int("entries", n))
		}
	}
}

// purgeAuditStream purges one log in batches and returns how many entries
// it deleted.
func (s *Server) purgeAuditStream(stop <-chan struct{}, stream tokens.AuditStream, before time.Time, keep int) (int, error) {
	total := 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.StoreTimeout.D())
		n, err := s.store.PurgeAudit(ctx, stream, before, keep, tokens.AuditBatch)
		cancel()
		total += n
		if err != nil || n < tokens.AuditBatch {
			return total, err
		}
		select {
		case <-stop:
			return total, nil
		case <-time.After(auditPurgePause):
		}
	}
}
