package kubesource

import (
	"context"
	"fmt"
	"net/http"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"

	"github.com/fencegw/fencegw/tokens/source"
)

// Source reads leaders from Kubernetes Leases. It implements source.Source
// and is safe for concurrent use. Create it with Open.
type Source struct {
	client *rest.RESTClient // of coordination.k8s.io/v1 alone
	http   *http.Client
	host   string
	opts   Options // after WithDefaults
	now    func() time.Time

	closer source.Closer
}

var _ source.Source = (*Source)(nil)

// Open validates o (see Options.Validate), loads the client configuration
// (see Options.Kubeconfig) and checks that the API server answers GET
// /version with these credentials, so that a bad kubeconfig or an API
// server out of reach fails here, before ctx ends, rather than on the
// first request. Whether the credentials may get Leases in the namespace
// shows on the first read (403 fails it closed).
func Open(ctx context.Context, o Options) (*Source, error) {
	o = o.WithDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	cfg, err := restConfig(o.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubesource: %w", err)
	}
	return openConfig(ctx, cfg, o)
}

// openConfig is Open with the client configuration loaded.
func openConfig(ctx context.Context, cfg *rest.Config, o Options) (*Source, error) {
	cfg = rest.CopyConfig(cfg)
	if err := tune(cfg); err != nil {
		return nil, fmt.Errorf("kubesource: client for %s: %w", cfg.Host, err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubesource: client for %s: %w", cfg.Host, err)
	}
	rc, err := rest.RESTClientForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("kubesource: client for %s: %w", cfg.Host, err)
	}
	s := &Source{client: rc, http: hc, host: cfg.Host, opts: o, now: time.Now}
	if err := rc.Get().AbsPath("/version").Do(ctx).Error(); err != nil {
		s.release()
		return nil, fmt.Errorf("kubesource: API server %s: %w", cfg.Host, err)
	}
	return s, nil
}

// Current reads the leader of resource: the Lease Options.LeaseFor
// (resource) names in Options.Namespace, with a GET that names no
// resourceVersion, which the API server answers with a quorum read from
// etcd (never its watch cache), then judges it with the gateway's clock
// (see the package documentation).
//
// A Lease that does not exist, or names no holder, gives source.Leader{}
// (no leader). Every error wraps a *tokens.UnavailableError: the caller
// must fail closed. It also wraps source.ErrClosed after Close,
// ErrInvalidLeaseName when resource makes the name invalid, and ErrBadLease
// for a spec no election writes. A read whose context ends returns with
// the context's error.
func (s *Source) Current(ctx context.Context, resource string) (source.Leader, error) {
	return source.ReadLeader(ctx, resource, s.current)
}

func (s *Source) current(ctx context.Context, resource string) (source.Leader, error) {
	if s.closer.Closed() {
		return source.Leader{}, fmt.Errorf("kubesource: %w", source.ErrClosed)
	}
	name := s.opts.LeaseFor(resource)
	if err := CheckLeaseName(name); err != nil {
		return source.Leader{}, fmt.Errorf("kubesource: Lease of resource %q: %w", resource, err)
	}
	// No resourceVersion: the API server reads etcd's quorum, not its cache.
	var lease coordinationv1.Lease
	err := s.client.Get().Namespace(s.opts.Namespace).Resource("leases").Name(name).Do(ctx).Into(&lease)
	if apierrors.IsNotFound(err) {
		return source.Leader{}, nil
	}
	if err != nil {
		return source.Leader{}, fmt.Errorf("kubesource: get Lease %s/%s from %s: %w", s.opts.Namespace, name, s.host, err)
	}
	l, err := leaderOf(lease.Spec, s.now(), s.opts.SkewMargin)
	if err != nil {
		return source.Leader{}, fmt.Errorf("kubesource: Lease %s/%s: %w", s.opts.Namespace, name, err)
	}
	return l, nil
}

// Close releases the client's idle connections; Current then fails with
// source.ErrClosed. Close always returns nil and may be called more than
// once.
func (s *Source) Close() error {
	return s.closer.Close(func() error {
		s.release()
		return nil
	})
}

func (s *Source) release() { utilnet.CloseIdleConnectionsFor(s.http.Transport) }
