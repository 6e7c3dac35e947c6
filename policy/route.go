package policy

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/fencegw/fencegw/tokens"
)

// TokenMode says which fencing tokens a route accepts.
type TokenMode string

// The token modes.
const (
	// TokensSigned accepts only tokens signed by the token authority.
	TokensSigned TokenMode = "signed"
	// TokensRaw accepts a raw decimal epoch in the Fencing-Token header.
	TokensRaw TokenMode = "raw"
	// TokensAny accepts either.
	TokensAny TokenMode = "any"
)

// ResourceHeader is the request header that names the resource on routes
// that do not name it themselves.
const ResourceHeader = "Fencing-Resource"

// SafeMethods are the methods a route leaves unfenced unless it lists its
// own: the methods RFC 9110 defines as safe and that fencegw forwards
// without a token. Every other method, including unknown ones, is a write.
var SafeMethods = []string{http.MethodGet, http.MethodHead, http.MethodOptions}

// Route sends requests whose path starts with Prefix (and, when Host is set,
// whose host is Host) to Upstream.
type Route struct {
	// Name identifies the route in logs and answers; the prefix when unset.
	Name string
	// Host, when non-empty, restricts the route to requests for this host
	// (compared case-insensitively, without port).
	Host string
	// Prefix is the path prefix the route serves; it starts with "/".
	Prefix string
	// Upstream is the absolute http(s) URL requests are proxied to. The
	// request path is appended to Upstream's path.
	Upstream *url.URL
	// StripPrefix removes Prefix from the path before proxying.
	StripPrefix bool
	// Tokens says which tokens the route accepts.
	Tokens TokenMode
	// Verifier checks the route's tokens.
	Verifier tokens.Verifier
	// Resource names the resource; nil means a signed token's resource, or
	// else the request's Fencing-Resource header, does.
	Resource *tokens.Template
	// EpochSource, when set, is an external election whose current epoch a
	// raw epoch must equal.
	EpochSource tokens.EpochSource
	// EpochSourceKind names EpochSource's kind as configured (postgres,
	// etcd, redis, zookeeper, kubernetes); "" when the route has none and
	// the gateway's own fence decides alone. Metrics, spans and the audit
	// name it.
	EpochSourceKind string
	// Methods are the fenced methods, upper case; others pass unfenced.
	// Nil fences every method but SafeMethods.
	Methods []string
	// Transport, when set, carries requests to this route's upstream (its
	// own TLS settings); the gateway's shared transport otherwise.
	Transport http.RoundTripper
	// Idempotency says what a fenced write's Idempotency-Key does.
	Idempotency IdempotencyMode
	// RawOnLeased lets raw epochs write to resources the gateway leases,
	// trusting every client of the route (raw_on_leased: allow).
	RawOnLeased bool
}

// IdempotencyMode says what a route does with the Idempotency-Key header
// of a fenced write.
type IdempotencyMode string

// The idempotency modes.
const (
	// IdempotencyOptional: a write with a key is forwarded at most once
	// per (resource, key); one without is forwarded as it is.
	IdempotencyOptional IdempotencyMode = "optional"
	// IdempotencyRequired: as optional, and a write without a key is
	// refused.
	IdempotencyRequired IdempotencyMode = "required"
	// IdempotencyOff: the key is forwarded and nothing more.
	IdempotencyOff IdempotencyMode = "off"
)

// Fenced reports whether requests with method need a fencing token: every
// method but SafeMethods, or the route's own list. Method names are
// compared exactly; CheckMethod refuses those that are not upper case
// before any route sees them.
func (r *Route) Fenced(method string) bool {
	if r.Methods == nil {
		return !slices.Contains(SafeMethods, method)
	}
	return slices.Contains(r.Methods, method)
}

// Subpath returns the part of path below the route's prefix, starting with
// "/", and whether the route serves path at all. The prefix matches only
// at a segment boundary: "/tenants" serves "/tenants" and "/tenants/42",
// never "/tenants..", "/tenantsX"; "/email/" serves "/email/send" and
// "/email/". The subpath is what a stripped route sends upstream and what
// {segment:N} placeholders count in.
func (r *Route) Subpath(path string) (string, bool) {
	return Subpath(path, r.Prefix)
}

// Subpath is Route.Subpath for a bare prefix.
func Subpath(path, prefix string) (string, bool) {
	if strings.HasSuffix(prefix, "/") {
		if !strings.HasPrefix(path, prefix) {
			return "", false
		}
		return path[len(prefix)-1:], true
	}
	switch {
	case path == prefix:
		return "/", true
	case strings.HasPrefix(path, prefix) && path[len(prefix)] == '/':
		return path[len(prefix):], true
	}
	return "", false
}

// UpstreamPath returns the path sent upstream for path, which the route
// serves: the subpath when the route strips its prefix, path otherwise.
// The upstream URL's own path is joined in front of it by the proxy.
func (r *Route) UpstreamPath(path string) string {
	if !r.StripPrefix {
		return path
	}
	sub, _ := r.Subpath(path)
	return sub
}

// ResolveResource names the resource a fenced request writes to: the
// route's template, or else the request's Fencing-Resource header. The name
// is checked with tokens.ValidateResource.
func (r *Route) ResolveResource(req *http.Request) (string, error) {
	var name string
	if r.Resource != nil {
		var err error
		if name, err = Render(r.Resource, req, r.Prefix); err != nil {
			return "", err
		}
	} else {
		var err error
		if name, err = headerValue(req.Header, ResourceHeader); err != nil {
			return "", fmt.Errorf("the route names no resource: %w", err)
		}
	}
	if err := tokens.ValidateResource(name); err != nil {
		return "", err
	}
	return name, nil
}

// Table matches requests to routes: routes with a host before routes
// without, then the longest prefix first.
type Table struct {
	routes []*Route
}

// NewTable builds a table. Two routes with the same host and prefix are an
// error.
func NewTable(routes []*Route) (*Table, error) {
	seen := make(map[string]bool, len(routes))
	sorted := make([]*Route, len(routes))
	for i, r := range routes {
		if r.Prefix == "" || r.Prefix[0] != '/' {
			return nil, fmt.Errorf("route %d: prefix %q does not start with /", i, r.Prefix)
		}
		if r.Upstream == nil {
			return nil, fmt.Errorf("route %d: no upstream", i)
		}
		if r.Verifier == nil {
			return nil, fmt.Errorf("route %d: no token verifier", i)
		}
		key := strings.ToLower(r.Host) + " " + r.Prefix
		if seen[key] {
			return nil, fmt.Errorf("route %d: another route has host %q and prefix %q", i, r.Host, r.Prefix)
		}
		seen[key] = true
		if r.Name == "" {
			r.Name = r.Prefix
		}
		sorted[i] = r
	}
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if (a.Host != "") != (b.Host != "") {
			return a.Host != ""
		}
		return len(a.Prefix) > len(b.Prefix)
	})
	return &Table{routes: sorted}, nil
}

// Routes returns the routes in matching order.
func (t *Table) Routes() []*Route { return t.routes }

// SignedRouteFor returns a route that takes the signed tokens of resource's
// lease for requests to req's host: one that accepts signed tokens and
// names no resource (any lease's token) or exactly resource; nil when none
// does. Routes that name their resource come first.
func (t *Table) SignedRouteFor(resource string, req *http.Request) *Route {
	host := requestHost(req)
	var unbound *Route
	for _, r := range t.routes {
		if r.Tokens == TokensRaw || r.Host != "" && !strings.EqualFold(r.Host, host) {
			continue
		}
		if r.Resource == nil {
			if unbound == nil {
				unbound = r
			}
			continue
		}
		if s, ok := r.Resource.Static(); ok && s == resource {
			return r
		}
	}
	return unbound
}

// Match returns the route for req, or nil if none serves it.
func (t *Table) Match(req *http.Request) *Route {
	var host string // the request's host, read at the first route that names one
	for _, r := range t.routes {
		if r.Host != "" && host == "" {
			host = requestHost(req)
		}
		if r.Host != "" && !strings.EqualFold(r.Host, host) {
			continue
		}
		if _, ok := r.Subpath(req.URL.Path); ok {
			return r
		}
	}
	return nil
}

// requestHost is req's Host without its port and trailing dot
// ("api.example.:8080" is "api.example").
func requestHost(req *http.Request) string {
	host := req.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.TrimSuffix(host, ".")
}
