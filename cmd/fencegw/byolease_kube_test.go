package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/fencegw/fencegw/internal/testutil/testkube"
)

// kubeLeases drives one Lease as client-go's leaderelection does, standing
// in for the team's own controllers.
type kubeLeases struct {
	t      *testing.T
	leases coordclient.LeaseInterface
	name   string
}

func newKubeLeases(t *testing.T, srv *testkube.Server, name string) *kubeLeases {
	t.Helper()
	c, err := coordclient.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return &kubeLeases{t: t, leases: c.Leases("default"), name: name}
}

// acquire makes holder the Lease's holder for 60 s and returns its
// leaseTransitions: 0 for a new Lease, one more when the holder changes.
func (k *kubeLeases) acquire(holder string) int64 {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now, secs, transitions := metav1.NewMicroTime(time.Now()), int32(60), int32(0)
	spec := coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs,
		AcquireTime: &now, RenewTime: &now, LeaseTransitions: &transitions}
	l, err := k.leases.Get(ctx, k.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = k.leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: k.name}, Spec: spec}, metav1.CreateOptions{})
	case err == nil:
		transitions = *l.Spec.LeaseTransitions
		if *l.Spec.HolderIdentity != holder {
			transitions++
		}
		l.Spec = spec
		_, err = k.leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		k.t.Fatalf("acquire Lease %s for %s: %v", k.name, holder, err)
	}
	return int64(transitions)
}

// lapse moves the Lease's renewTime two minutes back: its holder stopped
// renewing it.
func (k *kubeLeases) lapse() {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := k.leases.Get(ctx, k.name, metav1.GetOptions{})
	if err == nil {
		past := metav1.NewMicroTime(time.Now().Add(-2 * time.Minute))
		l.Spec.RenewTime = &past
		_, err = k.leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		k.t.Fatalf("lapse Lease %s: %v", k.name, err)
	}
}

// TestBringYourOwnKubernetesLease fences writes of leaders that take a
// Kubernetes Lease as client-go's leaderelection does, on a real
// kube-apiserver: the first leader's epoch 0 is admitted, a higher epoch is
// 403, a lapsed or superseded one 412; with the API server down, writes are
// refused with 503 and Retry-After and nothing is forwarded, and they are
// admitted again once it is back.
func TestBringYourOwnKubernetesLease(t *testing.T) {
	srv := testkube.Start(t)
	k := newKubeLeases(t, srv, "report-generator")
	gw, up := startWithEpochSource(t, "/jobs/", "report-generator",
		`{kind: kubernetes, kubeconfig: "`+srv.Kubeconfig()+`", lease: report-generator}`)
	send := gw.proxy + "/jobs/run"

	expectWrite(t, send, 0, http.StatusPreconditionFailed, "before any leader")
	if e := k.acquire("node-a"); e != 0 {
		t.Fatalf("node-a's first epoch %d, want 0", e)
	}
	expectWrite(t, send, 0, http.StatusNoContent, "node-a's, epoch 0")
	expectWrite(t, send, 1, http.StatusForbidden, "above node-a's")
	k.lapse()
	expectWrite(t, send, 0, http.StatusPreconditionFailed, "node-a's, after its Lease lapsed")
	if e := k.acquire("node-b"); e != 1 {
		t.Fatalf("node-b took over at epoch %d, want 1", e)
	}
	expectWrite(t, send, 0, http.StatusPreconditionFailed, "node-a's, after the takeover (lower)")
	expectWrite(t, send, 1, http.StatusNoContent, "node-b's")
	expectWrite(t, send, 2, http.StatusForbidden, "above node-b's")

	srv.Stop()
	req, _ := http.NewRequest("POST", send, strings.NewReader("x"))
	req.Header.Set("Fencing-Token", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("write with the API server down = %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	srv.Restart()
	deadline := time.Now().Add(30 * time.Second)
	for post(t, send, "1", "") != http.StatusNoContent {
		if time.Now().After(deadline) {
			t.Fatal("node-b's writes still refused 30 s after the API server came back")
		}
		time.Sleep(100 * time.Millisecond)
	}
	want := []string{"0", "1", "1"}
	if got := up.values("Fencing-Epoch"); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("upstream received epochs %v, want %v", got, want)
	}
}
