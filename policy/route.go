package policy

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
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

// DefaultFencedMethods are the methods a route fences unless configured
// otherwise: the unsafe methods of RFC 9110.
var DefaultFencedMethods = []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

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
	Resource *Template
	// EpochSource, when set, is an external election whose current epoch a
	// raw epoch must equal.
	EpochSource tokens.EpochSource
	// Methods are the fenced methods, upper case. Others pass unfenced.
	Methods []string
	// Transport, when set, carries requests to this route's upstream (its
	// own TLS settings); the gateway's shared transport otherwise.
	Transport http.RoundTripper
}

// Fenced reports whether requests with method need a fencing token.
func (r *Route) Fenced(method string) bool {
	for _, m := range r.Methods {
		if m == method {
			return true
		}
	}
	return false
}

// ResolveResource names the resource a fenced request writes to: the
// route's template, or else the request's Fencing-Resource header. The name
// is checked with tokens.ValidateResource.
func (r *Route) ResolveResource(req *http.Request) (string, error) {
	var name string
	if r.Resource != nil {
		var err error
		if name, err = r.Resource.Render(req, r.Prefix); err != nil {
			return "", err
		}
	} else {
		v := req.Header.Values(ResourceHeader)
		if len(v) != 1 || v[0] == "" {
			return "", fmt.Errorf("%w: the route names no resource and the request has %d %s headers, want one",
				ErrUnresolved, len(v), ResourceHeader)
		}
		name = v[0]
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

// Match returns the route for req, or nil if none serves it.
func (t *Table) Match(req *http.Request) *Route {
	host := req.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(host, ".") // "api.example." is "api.example"
	for _, r := range t.routes {
		if r.Host != "" && !strings.EqualFold(r.Host, host) {
			continue
		}
		if strings.HasPrefix(req.URL.Path, r.Prefix) {
			return r
		}
	}
	return nil
}

// ErrUncleanPath means a request path holds ".", ".." or empty segments, or
// the characters ";" or "\\", which an upstream might resolve to a path of
// another route (a matrix parameter, a Windows separator).
var ErrUncleanPath = errors.New("request path is not clean")

// CheckPath refuses paths that are not in canonical form, so a request
// cannot reach an upstream path under one route while matching another.
func CheckPath(p string) error {
	if p == "" || p[0] != '/' {
		return fmt.Errorf("%w: %q does not start with /", ErrUncleanPath, p)
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "." || seg == ".." {
			return fmt.Errorf("%w: %q has a %q segment", ErrUncleanPath, p, seg)
		}
	}
	if strings.Contains(p, "//") {
		return fmt.Errorf("%w: %q has an empty segment", ErrUncleanPath, p)
	}
	if i := strings.IndexAny(p, ";\\"); i >= 0 {
		return fmt.Errorf("%w: %q holds %q", ErrUncleanPath, p, p[i])
	}
	return nil
}
