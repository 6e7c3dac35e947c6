package tokens_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// grantGate holds a committed grant before it returns to the Fence: the
// grant is in the store, visible to lease and fence reads, while the Fence
// has not yet learned its epoch.
type grantGate struct {
	*observedStore
	committed chan struct{}
	release   chan struct{}
}

func (s *grantGate) Acquire(ctx context.Context, name, holder string, t tokens.Terms, by tokens.Caller) (tokens.Grant, error) {
	g, err := s.observedStore.Acquire(ctx, name, holder, t, by)
	close(s.committed)
	<-s.release
	return g, err
}

// TestFenceGrantNeverAdmitsTheOldEpochOnceVisible: over an exclusive store,
// from the instant a grant is committed (and so readable), a write at the
// epoch it fenced is not admitted from memory.
func TestFenceGrantNeverAdmitsTheOldEpochOnceVisible(t *testing.T) {
	s := &grantGate{observedStore: newObserved(t, false), committed: make(chan struct{}), release: make(chan struct{})}
	f := tokens.NewFence(s, tokens.FenceOptions{})
	ctx := context.Background()
	admitted(t, f, "job", 1) // the cache now answers epoch 1 from memory

	granted := make(chan tokens.Grant, 1)
	go func() {
		g, err := f.Acquire(ctx, "job", "node-b", tokens.Terms{TTL: 15 * time.Second}, tokens.Caller{})
		if err != nil {
			t.Errorf("acquire: %v", err)
		}
		granted <- g
	}()
	<-s.committed
	if l, err := s.Lease(ctx, "job"); err != nil || l.Epoch != 2 {
		t.Fatalf("the store does not show the grant: %+v %v", l, err)
	}
	verdict := make(chan error, 1)
	go func() { verdict <- f.Admit(ctx, "job", 1) }()
	select {
	case err := <-verdict:
		t.Fatalf("epoch 1 answered while the grant of epoch 2 was visible: %v", err)
	case <-time.After(50 * time.Millisecond):
		// Waiting for the grant's outcome, as it must.
	}
	close(s.release)
	if g := <-granted; g.Epoch != 2 {
		t.Fatalf("grant epoch %d, want 2", g.Epoch)
	}
	var stale *tokens.StaleEpochError
	if err := <-verdict; !errors.As(err, &stale) || stale.Current != 2 {
		t.Fatalf("epoch 1 after the grant: %v, want stale at 2", err)
	}
}
