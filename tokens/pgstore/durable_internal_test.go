package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testpg"
)

// TestSessionsCommitDurably: the test server runs with synchronous_commit
// off; the store's sessions must not, while stronger settings are kept.
func TestSessionsCommitDurably(t *testing.T) {
	dsn := testpg.Shared(t).NewDatabase(t)
	for _, tc := range []struct{ param, want string }{
		{"", "on"},
		{"&synchronous_commit=off", "on"},
		{"&synchronous_commit=local", "local"},
		{"&synchronous_commit=remote_apply", "remote_apply"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := Open(ctx, dsn+tc.param)
		if err != nil {
			cancel()
			t.Fatalf("Open(%q): %v", tc.param, err)
		}
		var got string
		err = s.pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&got)
		s.Close()
		cancel()
		if err != nil {
			t.Fatalf("SHOW synchronous_commit: %v", err)
		}
		if got != tc.want {
			t.Errorf("DSN %q: session synchronous_commit = %q, want %q", tc.param, got, tc.want)
		}
	}
}
