package kubesource

import (
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencegw/fencegw/tokens/source"
)

func ptr[T any](v T) *T { return &v }

// TestLeaderOf: who leads, with which epoch, and until when on the
// gateway's clock less the margin.
func TestLeaderOf(t *testing.T) {
	now := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.MicroTime { m := metav1.NewMicroTime(now.Add(d)); return &m }
	spec := func(holder string, transitions int32, renewed time.Duration, seconds int32) coordinationv1.LeaseSpec {
		return coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseTransitions: &transitions,
			RenewTime: at(renewed), AcquireTime: at(renewed), LeaseDurationSeconds: &seconds}
	}
	for _, tc := range []struct {
		name string
		spec coordinationv1.LeaseSpec
		want source.Leader
	}{
		{"empty spec", coordinationv1.LeaseSpec{}, source.Leader{}},
		{"released", spec("", 3, 0, 15), source.Leader{}},
		{"first leader", spec("a", 0, 0, 15), source.Leader{Held: true, Epoch: 0, Holder: "a", Live: true}},
		{"no transitions field", coordinationv1.LeaseSpec{HolderIdentity: ptr("a"), RenewTime: at(0), LeaseDurationSeconds: ptr(int32(15))},
			source.Leader{Held: true, Holder: "a", Live: true}},
		{"later leader", spec("b", 7, -5*time.Second, 15), source.Leader{Held: true, Epoch: 7, Holder: "b", Live: true}},
		{"within the margin", spec("b", 7, -14*time.Second-time.Millisecond, 15), source.Leader{Held: true, Epoch: 7, Holder: "b"}},
		{"just before the margin", spec("b", 7, -14*time.Second+time.Millisecond, 15), source.Leader{Held: true, Epoch: 7, Holder: "b", Live: true}},
		{"lapsed", spec("b", 7, -time.Minute, 15), source.Leader{Held: true, Epoch: 7, Holder: "b"}},
		{"renewed in the future", spec("b", 7, time.Minute, 15), source.Leader{Held: true, Epoch: 7, Holder: "b", Live: true}},
		{"zero duration", spec("b", 7, 0, 0), source.Leader{Held: true, Epoch: 7, Holder: "b"}},
		{"no times", coordinationv1.LeaseSpec{HolderIdentity: ptr("a"), LeaseDurationSeconds: ptr(int32(15))}, source.Leader{Held: true, Holder: "a"}},
		{"acquired, never renewed", coordinationv1.LeaseSpec{HolderIdentity: ptr("a"), AcquireTime: at(0), LeaseDurationSeconds: ptr(int32(15))},
			source.Leader{Held: true, Holder: "a", Live: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := leaderOf(tc.spec, now, time.Second)
			if err != nil || got != tc.want {
				t.Fatalf("leaderOf = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	for _, bad := range []coordinationv1.LeaseSpec{spec("a", -1, 0, 15), spec("a", 1, 0, -15)} {
		if l, err := leaderOf(bad, now, time.Second); !errors.Is(err, ErrBadLease) {
			t.Fatalf("leaderOf(%+v) = %+v, %v; want ErrBadLease", bad, l, err)
		}
	}
}

// FuzzLeaderOf: any spec is read without panicking; a leader is held
// exactly when it names a holder, its epoch is leaseTransitions and never
// negative, and it is live only before its expiry less the margin.
func FuzzLeaderOf(f *testing.F) {
	f.Add("a", int32(0), int64(0), int32(15), int64(time.Second))
	f.Add("", int32(3), int64(-time.Minute), int32(15), int64(0))
	f.Add("b", int32(-1), int64(time.Hour), int32(-1), int64(time.Hour))
	f.Fuzz(func(t *testing.T, holder string, transitions int32, renewed int64, seconds int32, margin int64) {
		now := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
		renew := metav1.NewMicroTime(now.Add(time.Duration(renewed)))
		spec := coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseTransitions: &transitions,
			RenewTime: &renew, LeaseDurationSeconds: &seconds}
		l, err := leaderOf(spec, now, time.Duration(margin))
		switch {
		case err != nil:
			if !errors.Is(err, ErrBadLease) || holder == "" || (transitions >= 0 && seconds >= 0) {
				t.Fatalf("leaderOf(%+v) = %v", spec, err)
			}
		case holder == "":
			if l != (source.Leader{}) {
				t.Fatalf("no holder, yet %+v", l)
			}
		case !l.Held || l.Holder != holder || l.Epoch != int64(transitions) || l.Epoch < 0:
			t.Fatalf("leaderOf(%+v) = %+v", spec, l)
		case l.Live && (seconds <= 0 || !now.Before(renew.Add(time.Duration(seconds)*time.Second-time.Duration(margin)))):
			t.Fatalf("leaderOf(%+v) is live at %v", spec, now)
		}
	})
}
