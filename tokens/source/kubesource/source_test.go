package kubesource_test

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencegw/fencegw/internal/testutil/testkube"
	"github.com/fencegw/fencegw/tokens/source"
	"github.com/fencegw/fencegw/tokens/source/kubesource"
	"github.com/fencegw/fencegw/tokens/source/sourcetest"
)

// TestLeaseTimeline: what the contract does not drive, on one Lease named
// without {resource} in a namespace of its own. The first leader's epoch 0
// is admitted; client-go's caveat: the same identity taking the Lease
// again keeps its epoch; releasing it (an empty holderIdentity, as
// leaderelection's ReleaseOnCancel does) leaves no leader; a holder that
// changes raises the epoch. It also measures a read.
func TestLeaseTimeline(t *testing.T) {
	srv := testkube.Start(t)
	ctx := sourcetest.Context(t, time.Minute)
	ns := "team-a"
	createNamespace(t, srv, ns)
	src := open(t, srv, kubesource.Options{Namespace: ns, Lease: "report-generator"})
	e := &election{leases: leases(t, srv, ns)}

	sourcetest.MustLeader(t, src, "any", source.Leader{})
	if got := e.Acquire(t, "report-generator", "node-a"); got != 0 {
		t.Fatalf("first epoch %d, want 0", got)
	}
	a := source.Leader{Held: true, Epoch: 0, Holder: "node-a", Live: true}
	sourcetest.MustLeader(t, src, "report", a)
	sourcetest.MustCheck(t, src, "report", 0, sourcetest.Admit)
	sourcetest.MustCheck(t, src, "report", 1, sourcetest.NotIssued)

	e.Lapse(t, "report-generator")
	sourcetest.MustCheck(t, src, "report", 0, sourcetest.Lapsed)
	if got := e.Acquire(t, "report-generator", "node-a"); got != 0 {
		t.Fatalf("node-a took its own Lease again at epoch %d; client-go keeps 0", got)
	}
	sourcetest.MustLeader(t, src, "report", a) // the caveat: one epoch, two terms

	l, err := e.leases.Get(ctx, "report-generator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Spec.HolderIdentity = new(string) // released
	if _, err := e.leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sourcetest.MustLeader(t, src, "report", source.Leader{})
	sourcetest.MustCheck(t, src, "report", 0, sourcetest.NoLeader)
	if got := e.Acquire(t, "report-generator", "node-b"); got != 1 {
		t.Fatalf("node-b took over at epoch %d, want 1", got)
	}
	sourcetest.MustCheck(t, src, "report", 0, sourcetest.Superseded)
	sourcetest.MustCheck(t, src, "report", 1, sourcetest.Admit)

	const n = 50
	start := time.Now()
	for range n {
		sourcetest.Current(t, src, "report")
	}
	t.Logf("a read takes %v on average (%d reads)", time.Since(start)/n, n)
}

// createNamespace creates namespace ns on srv.
func createNamespace(t *testing.T, srv *testkube.Server, ns string) {
	t.Helper()
	cfg := srv.RESTConfig()
	body := `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + ns + `"}}`
	if err := postJSON(cfg, "/api/v1/namespaces", body); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
}

// TestResourceLease: {resource} selects each resource's Lease; a resource
// that makes the name invalid fails closed.
func TestResourceLease(t *testing.T) {
	srv := testkube.Start(t)
	src := open(t, srv, kubesource.Options{Lease: "tenant-{resource}-leader"})
	e := &election{leases: leases(t, srv, "default")}
	e.Acquire(t, "tenant-42-leader", "node-a")
	e.Acquire(t, "tenant-7-leader", "node-b")
	e.Acquire(t, "tenant-7-leader", "node-c")
	sourcetest.MustLeader(t, src, "42", source.Leader{Held: true, Epoch: 0, Holder: "node-a", Live: true})
	sourcetest.MustLeader(t, src, "7", source.Leader{Held: true, Epoch: 1, Holder: "node-c", Live: true})
	sourcetest.MustLeader(t, src, "8", source.Leader{})
	for _, r := range []string{"A", "a/b", "a_b", "x.", strings.Repeat("x", 250)} {
		_, err := src.Current(sourcetest.Context(t, 10*time.Second), r)
		sourcetest.MustUnavailable(t, "Current of resource "+r, err)
		if !errors.Is(err, kubesource.ErrInvalidLeaseName) {
			t.Fatalf("Current(%q) = %v, want ErrInvalidLeaseName", r, err)
		}
	}
}

// TestOpen: options that cannot be used fail Open at once, naming the
// field; an API server out of reach fails Open when its context ends.
func TestOpen(t *testing.T) {
	for _, tc := range []struct {
		o    kubesource.Options
		want string
	}{
		{kubesource.Options{Kubeconfig: "/nonexistent/kubeconfig"}, "kubeconfig /nonexistent/kubeconfig"},
		{kubesource.Options{Namespace: "A"}, "Namespace"},
		{kubesource.Options{Lease: "{header:x}"}, "Lease"},
	} {
		s, err := kubesource.Open(sourcetest.Context(t, 10*time.Second), tc.o)
		if err == nil {
			s.Close()
			t.Fatalf("Open(%+v) succeeded", tc.o)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("Open(%+v) = %v, want it to mention %q", tc.o, err, tc.want)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	kc := writeKubeconfig(t, dir, "https://"+addr)
	start := time.Now()
	s, err := kubesource.Open(sourcetest.Context(t, time.Second), kubesource.Options{Kubeconfig: kc})
	if err == nil {
		s.Close()
		t.Fatal("Open of an unreachable API server succeeded")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Open took %v with a 1 s context", took)
	}
}
