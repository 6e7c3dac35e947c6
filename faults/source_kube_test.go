package faults

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"

	"github.com/fencegw/fencegw/internal/testutil/testkube"
)

// The Kubernetes epoch source in the plan: a real kube-apiserver over an
// etcd embedded in the test process (internal/testutil/testkube), frozen
// and crashed here (the etcd is not), reached by each replica through a
// kubeconfig whose server is a proxy of its own (TLS passes through the
// TCP proxy). Leaders take the Lease of their resource as client-go's
// leaderelection does with a LeaseLock; the epoch is leaseTransitions, so
// the first term of each resource is at epoch 0.

// kubeLeaseSeconds is the leaders' leaseDurationSeconds. The gateway takes
// a Lease for lapsed a SkewMargin (1 s) before renewTime plus it, so a
// leader renewing every third of it is live for a second after each
// renewal.
const kubeLeaseSeconds = 2

// kubeNamespace holds the Leases; the route's Lease name is the resource.
const kubeNamespace = "default"

// startKubeSource starts a kube-apiserver; the route reads the Lease named
// after the resource in kubeNamespace, through the replica's proxy.
func startKubeSource(t *testing.T) *sourceEnv {
	srv := testkube.Start(t)
	return &sourceEnv{
		route: sourceRoute{targets: []string{strings.TrimPrefix(srv.Host(), "https://")}, resources: sourceResources(),
			yaml: func(addrs []string) string {
				return fmt.Sprintf("{kind: kubernetes, kubeconfig: %q, namespace: %q}", srv.KubeconfigVia(addrs[0]), kubeNamespace)
			}},
		ttl:       kubeLeaseSeconds * time.Second,
		zeroEpoch: true,
		elector: func(t *testing.T, holder string) elector {
			return &kubeElector{leases: kubeLeases(t, srv), holder: holder, ttlLock: ttlLock{ttl: kubeLeaseSeconds * time.Second}}
		},
		pause: srv.Pause, resume: srv.Resume, kill: srv.Stop, restart: srv.Restart,
	}
}

// kubeLeases is a client of the Leases in kubeNamespace with connections
// of its own (a Proxy function makes client-go build a transport instead
// of sharing its cache), released when t ends.
func kubeLeases(t *testing.T, srv *testkube.Server) coordclient.LeaseInterface {
	cfg := srv.RESTConfig()
	cfg.QPS = -1
	cfg.Proxy = http.ProxyFromEnvironment
	c, err := coordclient.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() {
		if rc, ok := c.RESTClient().(*rest.RESTClient); ok {
			rc.Client.CloseIdleConnections()
		}
	})
	return c.Leases(kubeNamespace)
}

// kubeElector is a leader taking a Lease as leaderelection does: created
// with leaseTransitions 0, taken over once renewTime plus
// leaseDurationSeconds has passed (or its holder released it) with
// leaseTransitions plus one, renewed and released with updates that name
// the resourceVersion it last wrote (optimistic concurrency). Each term
// has an identity of its own (holder and a term number), as the package
// kubesource documents: an identity that took a Lease again would keep
// its epoch.
type kubeElector struct {
	leases coordclient.LeaseInterface
	holder string
	ttlLock

	terms int
	lease *coordinationv1.Lease // as this term last wrote it
}

// kubeCall bounds one request of a leader.
const kubeCall = time.Second

func (e *kubeElector) campaign(resource string) (int64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), kubeCall)
	defer cancel()
	e.terms++
	e.unsure, e.lease = false, nil
	id := fmt.Sprintf("%s-term-%d", e.holder, e.terms)
	now := metav1.NewMicroTime(time.Now())
	spec := coordinationv1.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: ptrTo(int32(kubeLeaseSeconds)),
		AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptrTo(int32(0))}
	old, err := e.leases.Get(ctx, resource, metav1.GetOptions{})
	var l *coordinationv1.Lease
	switch {
	case apierrors.IsNotFound(err):
		l, err = e.leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: resource}, Spec: spec}, metav1.CreateOptions{})
	case err != nil:
		return 0, false
	case heldByAnother(old.Spec, id, now.Time):
		return 0, false
	default:
		*spec.LeaseTransitions = derefOr(old.Spec.LeaseTransitions, 0)
		if derefOr(old.Spec.HolderIdentity, "") != id {
			*spec.LeaseTransitions++
		}
		old.Spec = spec
		l, err = e.leases.Update(ctx, old, metav1.UpdateOptions{}) // a conflict: another took it first
	}
	if err != nil {
		return 0, false // an update of unknown outcome takes a term nobody uses, until it lapses
	}
	e.lease, e.set = l, time.Now()
	return int64(*l.Spec.LeaseTransitions), true
}

// heldByAnother: the Lease names a holder other than id whose renewTime
// plus leaseDurationSeconds is still ahead at now (leaderelection's test,
// on the candidate's clock).
func heldByAnother(spec coordinationv1.LeaseSpec, id string, now time.Time) bool {
	h := derefOr(spec.HolderIdentity, "")
	if h == "" || h == id || spec.RenewTime == nil {
		return false
	}
	return now.Before(spec.RenewTime.Add(time.Duration(derefOr(spec.LeaseDurationSeconds, 0)) * time.Second))
}

// renew sets renewTime to now, naming the resourceVersion the term last
// wrote: a conflict means the Lease changed under it (it no longer leads).
func (e *kubeElector) renew() bool {
	ctx, cancel := context.WithTimeout(context.Background(), kubeCall)
	defer cancel()
	l := e.lease.DeepCopy()
	now := metav1.NewMicroTime(time.Now())
	l.Spec.RenewTime = &now
	updated, err := e.leases.Update(ctx, l, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err):
		return false
	case err != nil:
		e.unsure = true
		return false
	}
	e.lease, e.set = updated, time.Now()
	return true
}

// resign releases the Lease as leaderelection's ReleaseOnCancel does: no
// holder, leaseDurationSeconds 1, leaseTransitions kept. Once that update
// returned the Lease names no holder; else the term is surely over when
// its last renewal lapsed.
func (e *kubeElector) resign() time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), kubeCall)
	defer cancel()
	l := e.lease.DeepCopy()
	now := metav1.NewMicroTime(time.Now())
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = ptrTo(""), ptrTo(int32(1))
	l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
	if _, err := e.leases.Update(ctx, l, metav1.UpdateOptions{}); err == nil {
		return time.Now()
	}
	return e.expiry()
}

func (e *kubeElector) close() {}

func ptrTo[T any](v T) *T { return &v }

// derefOr is *p, or or when p is nil.
func derefOr[T any](p *T, or T) T {
	if p == nil {
		return or
	}
	return *p
}
