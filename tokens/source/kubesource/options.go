package kubesource

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ResourcePlaceholder in Options.Lease stands for the resource name.
const ResourcePlaceholder = "{resource}"

// Defaults of Options.
const (
	// DefaultNamespace is the namespace of the Leases when Options leaves
	// Namespace empty.
	DefaultNamespace = "default"
	// DefaultLease is the Lease name template when Options leaves Lease
	// empty: the resource's own name.
	DefaultLease = ResourcePlaceholder
	// DefaultSkewMargin is how much earlier than renewTime +
	// leaseDurationSeconds the gateway's clock takes a Lease for lapsed
	// when Options leaves SkewMargin zero: the clock skew between the
	// leader that wrote renewTime and the gateway that reads it, tolerated
	// on the safe side.
	DefaultSkewMargin = time.Second
)

// Options configures Open.
type Options struct {
	// Kubeconfig is the path of a kubeconfig file whose current context
	// names the cluster and the credentials. When empty, Open uses the
	// in-cluster configuration (a pod's service account), and outside a
	// cluster the files $KUBECONFIG lists.
	Kubeconfig string
	// Namespace holds the Leases; DefaultNamespace if empty.
	Namespace string
	// Lease is the name template of the coordination.k8s.io/v1 Lease that
	// elects a resource's leader: every ResourcePlaceholder is replaced by
	// the resource; DefaultLease if empty. A template without the
	// placeholder names one Lease for every resource.
	Lease string
	// SkewMargin is subtracted from a Lease's expiry (renewTime +
	// leaseDurationSeconds) before the gateway's clock judges it;
	// DefaultSkewMargin if zero, never negative.
	SkewMargin time.Duration
}

// WithDefaults returns o with its empty fields set to their defaults.
func (o Options) WithDefaults() Options {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Lease == "" {
		o.Lease = DefaultLease
	}
	if o.SkewMargin == 0 {
		o.SkewMargin = DefaultSkewMargin
	}
	return o
}

// Validate checks o after WithDefaults: a Namespace that is a DNS-1123
// label, a Lease template that CheckLeaseTemplate accepts, a SkewMargin
// not negative. The error names the field. Validate reads no file.
func (o Options) Validate() error {
	if err := CheckNamespace(o.Namespace); err != nil {
		return fmt.Errorf("kubesource: Namespace: %w", err)
	}
	if err := CheckLeaseTemplate(o.Lease); err != nil {
		return fmt.Errorf("kubesource: Lease: %w", err)
	}
	if o.SkewMargin < 0 {
		return fmt.Errorf("kubesource: SkewMargin %v: must not be negative", o.SkewMargin)
	}
	return nil
}

// LeaseFor returns the name of resource's Lease: o.Lease (after
// WithDefaults) with every ResourcePlaceholder replaced by resource.
func (o Options) LeaseFor(resource string) string {
	return strings.ReplaceAll(o.WithDefaults().Lease, ResourcePlaceholder, resource)
}

// ErrInvalidLeaseName is wrapped by the errors about a Lease name the API
// server would refuse.
var ErrInvalidLeaseName = errors.New("invalid Lease name")

// CheckLeaseTemplate reports whether t can name Leases, with "x" for each
// ResourcePlaceholder: a DNS-1123 subdomain (lower-case letters, digits,
// '-' and '.', starting and ending with a letter or digit, at most 253
// characters), without other braces (ResourcePlaceholder is the only
// placeholder). Its error wraps ErrInvalidLeaseName.
func CheckLeaseTemplate(t string) error {
	if t == "" {
		return fmt.Errorf("%w: empty", ErrInvalidLeaseName)
	}
	sample := strings.ReplaceAll(t, ResourcePlaceholder, "x")
	if strings.ContainsAny(sample, "{}") {
		return fmt.Errorf("%w: %q: %s is the only placeholder", ErrInvalidLeaseName, t, ResourcePlaceholder)
	}
	if err := CheckLeaseName(sample); err != nil {
		return fmt.Errorf("%w (with %s as \"x\")", err, ResourcePlaceholder)
	}
	return nil
}

// CheckLeaseName reports whether name is a Lease name the API server
// accepts: a DNS-1123 subdomain. Its error wraps ErrInvalidLeaseName.
func CheckLeaseName(name string) error {
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Errorf("%w: %q: %s", ErrInvalidLeaseName, name, strings.Join(msgs, "; "))
	}
	return nil
}

// CheckNamespace reports whether ns is a namespace name: a DNS-1123 label
// (lower-case letters, digits and '-', starting and ending with a letter
// or digit, at most 63 characters).
func CheckNamespace(ns string) error {
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return fmt.Errorf("namespace %q: %s", ns, strings.Join(msgs, "; "))
	}
	return nil
}
