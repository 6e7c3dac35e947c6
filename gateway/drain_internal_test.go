package gateway

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// TestDrainEnter: a higher epoch waits for lower ones in flight; a lower
// one finding a higher one in flight, or cached, is refused; a wait that
// outlives its context registers nothing; idle resources are forgotten.
func TestDrainEnter(t *testing.T) {
	cached := map[string]int64{}
	d := newEpochDrain(func(r string) int64 { return cached[r] })
	ctx := context.Background()
	if err := d.enter(ctx, "r", 5); err != nil {
		t.Fatal(err)
	}
	if err := d.enter(ctx, "r", 5); err != nil {
		t.Fatalf("a second write at the same epoch: %v", err)
	}
	entered := make(chan error, 1)
	go func() { entered <- d.enter(ctx, "r", 6) }()
	select {
	case err := <-entered:
		t.Fatalf("6 entered while 5 was in flight: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	var stale *tokens.StaleEpochError
	if err := d.enter(ctx, "r", 4); !errors.As(err, &stale) || stale.Current != 6 {
		t.Fatalf("4 while 6 waits: %v, want stale at 6", err)
	}
	d.leave("r", 5)
	select {
	case err := <-entered:
		t.Fatalf("6 entered while a write at 5 was still in flight: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	d.leave("r", 5)
	if err := <-entered; err != nil {
		t.Fatalf("6 after both writes at 5 left: %v", err)
	}
	d.leave("r", 6)

	cached["r"] = 7
	if err := d.enter(ctx, "r", 6); !errors.As(err, &stale) || stale.Current != 7 {
		t.Fatalf("6 with 7 cached: %v, want stale at 7", err)
	}

	if err := d.enter(ctx, "s", 1); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := d.enter(short, "s", 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("2 waiting past its deadline: %v", err)
	}
	if err := d.enter(ctx, "s", 1); err != nil {
		t.Fatalf("1 after the timed-out 2 left: %v", err)
	}
	d.leave("s", 1)
	d.leave("s", 1)
	if len(d.res) != 0 {
		t.Fatalf("%d resources kept with nothing in flight", len(d.res))
	}
}
