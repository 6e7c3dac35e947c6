package source

import (
	"errors"
	"math"
	"testing"

	"github.com/fencegw/fencegw/tokens"
)

func TestCheck(t *testing.T) {
	live := func(e int64) Leader { return Leader{Held: true, Epoch: e, Holder: "node-a", Live: true} }
	lapsed := func(e int64) Leader { return Leader{Held: true, Epoch: e, Holder: "node-a"} }
	stale := func(current int64, reason string) error {
		return &tokens.StaleEpochError{Current: current, Reason: reason}
	}
	notIssued := func(issued int64) error { return &tokens.EpochNotIssuedError{Issued: issued} }
	for _, tc := range []struct {
		name      string
		l         Leader
		presented int64
		want      error // nil, or the verdict with Resource and Presented left out
	}{
		{"equal and live", live(7), 7, nil},
		{"below", live(7), 6, stale(7, "")},
		{"far below", live(7), math.MinInt64, stale(7, "")},
		{"above", live(7), 8, notIssued(7)},
		{"max int64", live(7), math.MaxInt64, notIssued(7)},
		{"equal but lapsed", lapsed(7), 7, stale(7, ReasonLapsed)},
		{"below and lapsed", lapsed(7), 3, stale(7, "")},
		{"above and lapsed", lapsed(7), 9, notIssued(7)},
		{"no leader", Leader{}, 1, stale(0, ReasonNoLeader)},
		{"no leader, zero presented", Leader{}, 0, stale(0, ReasonNoLeader)},
		{"not held, with a live holder", Leader{Holder: "x", Live: true}, 0, stale(0, ReasonNoLeader)},
		{"not held, epoch 7", Leader{Epoch: 7, Holder: "x", Live: true}, 7, stale(0, ReasonNoLeader)},
		{"negative epoch", Leader{Held: true, Epoch: -1, Live: true}, -1, stale(0, ReasonNoLeader)},
		// A Kubernetes Lease's first leader has leaseTransitions 0.
		{"first epoch 0", live(0), 0, nil},
		{"above first epoch 0", live(1), 2, notIssued(1)},
		{"first epoch 0, above", live(0), 1, notIssued(0)},
		{"first epoch 0, lapsed", lapsed(0), 0, stale(0, ReasonLapsed)},
		{"first epoch 0, negative presented", live(0), -1, stale(0, "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.l, "invoice-sweeper", tc.presented)
			switch want := tc.want.(type) {
			case nil:
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
			case *tokens.StaleEpochError:
				want.Resource, want.Presented = "invoice-sweeper", tc.presented
				var got *tokens.StaleEpochError
				if !errors.As(err, &got) || *got != *want {
					t.Fatalf("Check = %#v, want %#v", err, want)
				}
			case *tokens.EpochNotIssuedError:
				want.Resource, want.Presented = "invoice-sweeper", tc.presented
				var got *tokens.EpochNotIssuedError
				if !errors.As(err, &got) || *got != *want {
					t.Fatalf("Check = %#v, want %#v", err, want)
				}
			}
			if d := tokens.DecisionOf(err); tc.want != nil && d != tokens.DecisionStale && d != tokens.DecisionForbidden {
				t.Fatalf("DecisionOf(%v) = %s, want a verdict", err, d)
			}
		})
	}
}
