package pgsource_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegw/fencegw/internal/testutil/testpg"
	"github.com/fencegw/fencegw/tokens/source"
	"github.com/fencegw/fencegw/tokens/source/sourcetest"
)

// TestStandbyRefused restarts the server as a hot standby, which would
// answer reads: the source must fail closed rather than read a lease table
// that may lag behind a takeover, and must answer again once the server is
// promoted. (That every target_session_attrs setting is refused on a
// standby is tokens/internal/pgprimary's test.)
func TestStandbyRefused(t *testing.T) {
	cl := testpg.Require(t)
	b := backend(t, cl)
	const r = "invoice-sweeper"
	e := b.Election.Acquire(t, r, "node-a")
	s, err := b.Open(sourcetest.Context(t, 30*time.Second))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	sourcetest.MustCheck(t, s, r, e, sourcetest.Admit)

	if err := cl.RestartAsStandby(); err != nil {
		t.Fatalf("RestartAsStandby: %v", err)
	}
	// Pooled connections the restart broke fail first; then the primary
	// check refuses every new one, as it would Open's: they share the
	// pool configuration.
	var refused error
	for i := 0; i < 3 && !errors.Is(refused, pgconn.ErrStandbyConnection); i++ {
		_, refused = s.Current(sourcetest.Context(t, 10*time.Second), r)
		sourcetest.MustUnavailable(t, "Current on a standby", refused)
	}
	if !errors.Is(refused, pgconn.ErrStandbyConnection) {
		t.Fatalf("Current on a standby = %v, want it to wrap pgconn.ErrStandbyConnection", refused)
	}

	if err := cl.Promote(); err != nil {
		t.Fatalf("Promote: %v", err)
	}
	sourcetest.MustLeader(t, s, r, source.Leader{Held: true, Epoch: e, Holder: "node-a", Live: true})
}
