package tokens_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// signedClaims verifies any token as a signed token of holder "node-a".
type signedClaims struct{}

func (signedClaims) Verify(_ context.Context, tok string) (tokens.Claims, error) {
	e, err := tokens.ParseEpoch(tok)
	return tokens.Claims{Epoch: e, Resource: "job", Holder: "node-a", Expires: time.Now().Add(time.Minute)}, err
}

func decideRaw(f *tokens.Fence, resource string, epoch int64, allow bool) (tokens.Admission, error) {
	return f.Decide(context.Background(), tokens.Presented{Tokens: []string{strconv.FormatInt(epoch, 10)},
		Verifier: tokens.RawVerifier{}, Resource: func() (string, error) { return resource, nil }, RawOnLeased: allow})
}

func rawRefused(t *testing.T, f *tokens.Fence, resource string, epoch int64) {
	t.Helper()
	if _, err := decideRaw(f, resource, epoch, false); !errors.As(err, new(*tokens.RawOnLeasedError)) ||
		tokens.DecisionOf(err) != tokens.DecisionForbidden || !tokens.IsVerdict(err) {
		t.Fatalf("raw epoch %d on leased %q = %v, want *RawOnLeasedError", epoch, resource, err)
	}
}

// TestRawEpochOnLeasedResource: a raw epoch is refused on a resource a
// lease was granted for, at any epoch, from memory once the Fence knows it
// (no store call), whether the grant came through this Fence, another
// replica's over a shared store, or before a restart; unless the route
// allows it. Signed tokens are not concerned.
func TestRawEpochOnLeasedResource(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "exclusive", true: "shared"}[shared], func(t *testing.T) {
			ctx := context.Background()
			f, s := observedFence(t, shared)
			if _, err := decideRaw(f, "free", 1, false); err != nil {
				t.Fatalf("raw epoch on an unleased resource = %v", err)
			}
			g, err := f.Acquire(ctx, "job", "node-a", tokens.Terms{TTL: time.Minute}, tokens.Caller{})
			if err != nil {
				t.Fatal(err)
			}
			reads, advances := s.currents.Load(), s.advances.Load()
			for _, e := range []int64{g.Epoch - 1, g.Epoch, g.Epoch + 1, 1<<63 - 1} {
				if e > 0 {
					rawRefused(t, f, "job", e)
				}
			}
			if r, a := s.currents.Load()-reads, s.advances.Load()-advances; r != 0 || a != 0 {
				t.Fatalf("refusing raw epochs on a lease known here took %d reads and %d advances", r, a)
			}
			if a, err := decideRaw(f, "job", g.Epoch, true); err != nil || a.DeliverBy.IsZero() {
				t.Fatalf("raw epoch where the route allows it = %+v, %v", a, err)
			}
			a, err := f.Decide(ctx, tokens.Presented{Tokens: []string{strconv.FormatInt(g.Epoch, 10)}, Verifier: signedClaims{},
				Resource: func() (string, error) { return "job", nil }})
			if err != nil || a.Holder != "node-a" {
				t.Fatalf("signed token = %+v, %v", a, err)
			}
			// Another Fence over the same store: another replica when the
			// store is shared, this one restarted when it is exclusive.
			other := tokens.NewFence(s, tokens.FenceOptions{})
			if shared {
				if _, err := other.Acquire(ctx, "free", "node-b", tokens.Terms{TTL: time.Minute}, tokens.Caller{}); err != nil {
					t.Fatal(err)
				}
				rawRefused(t, f, "free", 2)
				reads = s.currents.Load()
				rawRefused(t, f, "free", 2)
				if n := s.currents.Load() - reads; n != 0 {
					t.Fatalf("a lease learned from the store was read again: %d reads", n)
				}
				// A resource this replica admitted raw epochs for, then
				// leased through another: an epoch below what this replica
				// saw is refused as raw-on-leased too, as every other one
				// is, so the answers do not bisect to the lease's epoch.
				if _, err := decideRaw(f, "seen", 5, false); err != nil {
					t.Fatal(err)
				}
				if _, err := other.Acquire(ctx, "seen", "node-b", tokens.Terms{TTL: time.Minute}, tokens.Caller{}); err != nil {
					t.Fatal(err)
				}
				for _, e := range []int64{3, 5, 6, 7} {
					rawRefused(t, f, "seen", e)
				}
				return
			}
			rawRefused(t, other, "job", g.Epoch)
			reads = s.currents.Load()
			rawRefused(t, other, "job", g.Epoch)
			if n := s.currents.Load() - reads; n != 0 {
				t.Fatalf("a lease learned from the store was read again: %d reads", n)
			}
		})
	}
}

// TestRawEpochRacingTheFirstGrant: raw writes chase a resource's HWM while
// its first lease is granted; none is admitted at the grant's epoch or
// above, and every one decided after the grant returned is refused.
func TestRawEpochRacingTheFirstGrant(t *testing.T) {
	for _, shared := range []bool{false, true} {
		for i := range 30 {
			f, _ := observedFence(t, shared)
			res := "race-" + strconv.Itoa(i)
			if _, err := decideRaw(f, res, 1, false); err != nil {
				t.Fatal(err)
			}
			var granted atomic.Int64
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						g := granted.Load() // before the decision
						h := f.Cached(res)
						for _, e := range []int64{h, h + 1} {
							a, err := decideRaw(f, res, e, false)
							if err != nil {
								continue
							}
							if g > 0 || (granted.Load() > 0 && a.Epoch >= granted.Load()) {
								t.Errorf("raw epoch %d admitted with the lease at %d (granted before: %v)", a.Epoch, granted.Load(), g > 0)
							}
						}
					}
				}()
			}
			time.Sleep(time.Millisecond)
			g, err := f.Acquire(context.Background(), res, "node-a", tokens.Terms{TTL: time.Minute}, tokens.Caller{})
			if err != nil {
				t.Fatal(err)
			}
			granted.Store(g.Epoch)
			time.Sleep(2 * time.Millisecond)
			close(stop)
			wg.Wait()
		}
	}
}
