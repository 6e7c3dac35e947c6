package source

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	live := func(e int64) Leader { return Leader{Epoch: e, Holder: "node-a", Live: true} }
	lapsed := func(e int64) Leader { return Leader{Epoch: e, Holder: "node-a"} }
	for _, tc := range []struct {
		name      string
		l         Leader
		presented int64
		stale     StaleReason // "" unless a *StaleError is wanted
		ahead     bool
	}{
		{"equal and live", live(7), 7, "", false},
		{"below", live(7), 6, ReasonSuperseded, false},
		{"far below", live(7), math.MinInt64, ReasonSuperseded, false},
		{"above", live(7), 8, "", true},
		{"max int64", live(7), math.MaxInt64, "", true},
		{"equal but lapsed", lapsed(7), 7, ReasonLapsed, false},
		{"below and lapsed", lapsed(7), 3, ReasonSuperseded, false},
		{"above and lapsed", lapsed(7), 9, "", true},
		{"no leader", Leader{}, 1, ReasonNoLeader, false},
		{"no leader, zero presented", Leader{}, 0, ReasonNoLeader, false},
		{"epoch 0 with a live holder", Leader{Holder: "x", Live: true}, 0, ReasonNoLeader, false},
		{"negative epoch", Leader{Epoch: -1, Live: true}, -1, ReasonNoLeader, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.l, "invoice-sweeper", tc.presented)
			var se *StaleError
			var ae *AheadError
			switch {
			case tc.stale != "":
				if !errors.As(err, &se) {
					t.Fatalf("Check = %v, want *StaleError", err)
				}
				if se.Reason != tc.stale || se.Presented != tc.presented || se.Resource != "invoice-sweeper" {
					t.Fatalf("Check = %+v, want reason %q presented %d", se, tc.stale, tc.presented)
				}
				wantCur := tc.l.Epoch
				if wantCur < 0 {
					wantCur = 0
				}
				if se.Current != wantCur {
					t.Fatalf("StaleError.Current = %d, want %d", se.Current, wantCur)
				}
			case tc.ahead:
				if !errors.As(err, &ae) {
					t.Fatalf("Check = %v, want *AheadError", err)
				}
				if ae.Presented != tc.presented || ae.Current != tc.l.Epoch || ae.Resource != "invoice-sweeper" {
					t.Fatalf("Check = %+v", ae)
				}
			default:
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
			}
		})
	}
}

func TestErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want []string
	}{
		{&StaleError{Resource: "r", Presented: 1, Current: 2, Reason: ReasonSuperseded}, []string{`"r"`, "presented 1", "has 2", "superseded"}},
		{&StaleError{Resource: "r", Presented: 2, Current: 2, Reason: ReasonLapsed}, []string{"lease lapsed"}},
		{&AheadError{Resource: "r", Presented: 9, Current: 2}, []string{`"r"`, "presented 9", "has 2", "not issued"}},
	} {
		msg := tc.err.Error()
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%q does not contain %q", msg, w)
			}
		}
	}
}
