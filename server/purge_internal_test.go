package server

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/tokens"
)

// TestPurgeAuditKeepsRetention: the background purge deletes the audit
// entries older than audit.retention and those beyond audit.history.max_entries,
// in both logs.
func TestPurgeAuditKeepsRetention(t *testing.T) {
	c := config.Default()
	c.Store = filepath.Join(t.TempDir(), "fencegw.db")
	c.Routes = []config.Route{{Prefix: "/w/", Upstream: "http://127.0.0.1:1", Tokens: config.TokensRaw}}
	c.Audit.Retention = config.Duration(time.Hour)
	c.Audit.History.MaxEntries = 100
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), c, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	var entries []tokens.AuditEntry
	for _, stream := range []tokens.AuditStream{tokens.AuditRefusals, tokens.AuditLeases} {
		// Two entries of two hours ago, and 150 of the last minutes.
		for i := range 152 {
			at := now.Add(-time.Duration(i) * time.Second)
			if i >= 150 {
				at = now.Add(-2 * time.Hour).Add(-time.Duration(i) * time.Second)
			}
			entries = append(entries, tokens.AuditEntry{Stream: stream, ID: tokens.AuditID(at, "r"), Resource: "r",
				Kind: "stale", First: at, Last: at, Count: 1})
		}
	}
	if err := s.store.PutAudit(ctx, entries); err != nil {
		t.Fatal(err)
	}
	s.purgeAudit(make(chan struct{}))
	for _, stream := range []tokens.AuditStream{tokens.AuditRefusals, tokens.AuditLeases} {
		left, err := s.store.ListAudit(ctx, tokens.AuditQuery{Stream: stream, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 100 || !left[0].First.Equal(now) || !left[99].First.Equal(now.Add(-99*time.Second)) {
			t.Fatalf("%s after the purge: %d entries, newest %v, oldest %v; want the newest 100", stream, len(left),
				left[0].First, left[len(left)-1].First)
		}
	}
}
