package tokens_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// TestFenceLeaseLifeFromMemory: over an exclusive store, a write of a live
// grant is admitted from memory with the grant's deadline; once the cached
// deadline passes the Fence asks the store again, and fails closed when
// the store cannot answer; a lapse read once is refused from memory after.
func TestFenceLeaseLifeFromMemory(t *testing.T) {
	f, s := observedFence(t, false)
	ctx := context.Background()
	g, err := f.Acquire(ctx, "job", "node-a", tokens.Terms{TTL: time.Second}, tokens.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	before := s.currents.Load()
	a, err := f.Decide(ctx, tokens.Presented{Tokens: []string{"1"}, Verifier: tokens.RawVerifier{},
		Resource: func() (string, error) { return "job", nil }, RawOnLeased: true})
	if err != nil || a.Epoch != g.Epoch || a.DeliverBy.IsZero() || time.Until(a.DeliverBy) > time.Second {
		t.Fatalf("Decide at the live grant = %+v, %v; want admitted with DeliverBy within 1s", a, err)
	}
	if n := s.currents.Load() - before; n != 0 {
		t.Fatalf("a write of a live grant read the store %d times, want none", n)
	}
	time.Sleep(time.Until(a.DeliverBy))
	s.down.Store(true)
	unavailable(t, f, "job", g.Epoch) // the cached life ran out: the store must say
	s.down.Store(false)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := f.Admit(ctx, "job", g.Epoch)
		var stale *tokens.StaleEpochError
		if errors.As(err, &stale) && strings.Contains(stale.Reason, "lapsed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Admit after the lapse = %v", err)
		}
	}
	before = s.currents.Load()
	s.down.Store(true) // known lapsed: refused from memory, store or not
	if err := f.Admit(ctx, "job", g.Epoch); !errors.As(err, new(*tokens.StaleEpochError)) {
		t.Fatalf("Admit of a grant known lapsed with the store down = %v, want stale", err)
	}
	if n := s.currents.Load() - before; n != 0 {
		t.Fatalf("a write of a grant known lapsed read the store %d times", n)
	}
}
