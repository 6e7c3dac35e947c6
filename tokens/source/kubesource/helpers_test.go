package kubesource_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"

	"github.com/fencegw/fencegw/internal/testutil/testkube"
	"github.com/fencegw/fencegw/tokens/source"
	"github.com/fencegw/fencegw/tokens/source/kubesource"
	"github.com/fencegw/fencegw/tokens/source/sourcetest"
)

// leaseSeconds is the leaseDurationSeconds of the tests' leaders.
const leaseSeconds = 60

// leases returns a client of the Leases in namespace on srv, its
// connections released when t ends.
func leases(t *testing.T, srv *testkube.Server, namespace string) coordclient.LeaseInterface {
	t.Helper()
	cfg := srv.RESTConfig()
	cfg.QPS = -1
	c, err := coordclient.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return c.Leases(namespace)
}

// election takes and lapses Leases as client-go's leaderelection does
// with a LeaseLock: holderIdentity, leaseDurationSeconds, acquireTime and
// renewTime, and leaseTransitions incremented when the holder changes.
type election struct {
	leases coordclient.LeaseInterface
	mu     sync.Mutex // one change at a time, as one leader per Lease
}

// Acquire takes the Lease named resource for holder, creating it with
// leaseTransitions 0 when it does not exist.
func (e *election) Acquire(t *testing.T, resource, holder string) int64 {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx := sourcetest.Context(t, 30*time.Second)
	now := metav1.NewMicroTime(time.Now())
	spec := coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: ptr(int32(leaseSeconds)),
		AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr(int32(0))}
	old, err := e.leases.Get(ctx, resource, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, err := e.leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: resource}, Spec: spec}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create Lease %s: %v", resource, err)
		}
		return 0
	}
	if err != nil {
		t.Fatalf("get Lease %s: %v", resource, err)
	}
	*spec.LeaseTransitions = deref(old.Spec.LeaseTransitions)
	if deref(old.Spec.HolderIdentity) != holder {
		*spec.LeaseTransitions++
	}
	old.Spec = spec
	if _, err := e.leases.Update(ctx, old, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update Lease %s: %v", resource, err)
	}
	return int64(*spec.LeaseTransitions)
}

// Lapse sets the Lease's renewTime so far back that it lapsed on every
// clock, as when its leader stopped renewing it.
func (e *election) Lapse(t *testing.T, resource string) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx := sourcetest.Context(t, 30*time.Second)
	l, err := e.leases.Get(ctx, resource, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Lease %s: %v", resource, err)
	}
	past := metav1.NewMicroTime(time.Now().Add(-2 * leaseSeconds * time.Second))
	l.Spec.RenewTime = &past
	if _, err := e.leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update Lease %s: %v", resource, err)
	}
}

// backend reads and takes Leases in namespace "default" on srv.
func backend(t *testing.T, srv *testkube.Server) *sourcetest.Backend {
	return &sourcetest.Backend{
		Open: func(ctx context.Context) (source.Source, error) {
			return kubesource.Open(ctx, kubesource.Options{Kubeconfig: srv.Kubeconfig()})
		},
		Election: &election{leases: leases(t, srv, "default")},
	}
}

// open opens a Source with o's Kubeconfig defaulting to srv's, closed
// when t ends.
func open(t *testing.T, srv *testkube.Server, o kubesource.Options) *kubesource.Source {
	t.Helper()
	if o.Kubeconfig == "" {
		o.Kubeconfig = srv.Kubeconfig()
	}
	s, err := kubesource.Open(sourcetest.Context(t, 30*time.Second), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// postJSON POSTs body to path on the API server cfg names.
func postJSON(cfg *rest.Config, path, body string) error {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	resp, err := hc.Post(cfg.Host+path, "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("POST %s: %s: %s", path, resp.Status, b)
	}
	return nil
}

// writeKubeconfig writes a kubeconfig for server, without credentials or
// a trusted CA, into dir and returns its path.
func writeKubeconfig(t *testing.T, dir, server string) string {
	t.Helper()
	p := filepath.Join(dir, "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"" + server + "\", insecure-skip-tls-verify: true}}]\n" +
		"users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
