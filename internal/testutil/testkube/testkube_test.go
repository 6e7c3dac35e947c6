package testkube_test

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/fencegw/fencegw/internal/testutil/testkube"
)

// TestStopRestart: the server serves Leases; a paused server answers
// nothing until resumed; a stopped server refuses clients and a restarted
// one answers on the same address with its data.
func TestStopRestart(t *testing.T) {
	start := time.Now()
	s := testkube.Start(t)
	t.Logf("kube-apiserver ready in %v", time.Since(start))
	c, err := coordclient.NewForConfig(s.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	leases := c.Leases("default")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	holder := "node-a"
	if _, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kept"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("Create: %v", err)
	}
	s.Pause()
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = leases.Get(short, "kept", metav1.GetOptions{})
	cancelShort()
	if err == nil {
		t.Fatal("Get on a paused server succeeded")
	}
	s.Resume()
	if _, err := leases.Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Fatalf("Get after Resume: %v", err)
	}
	s.Pause() // Stop ends a paused server too
	s.Stop()
	if _, err := leases.Get(ctx, "kept", metav1.GetOptions{}); err == nil {
		t.Fatal("Get on a stopped server succeeded")
	}
	start = time.Now()
	s.Restart()
	t.Logf("kube-apiserver restarted in %v", time.Since(start))
	l, err := leases.Get(ctx, "kept", metav1.GetOptions{})
	if err != nil || *l.Spec.HolderIdentity != holder {
		t.Fatalf("Get after Restart = %+v, %v", l, err)
	}
}
