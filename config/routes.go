package config

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// RouteDeps are what routes need beyond their configuration.
type RouteDeps struct {
	// Signed verifies signed tokens; routes with tokens signed or any need it.
	Signed tokens.Verifier
	// OpenSource opens a route's epoch source; field names it in errors.
	OpenSource func(field string, s *EpochSource) (tokens.EpochSource, error)
	// Transport returns the transport toward an upstream with its own TLS.
	Transport func(*tls.Config) http.RoundTripper
}

// PolicyRoutes turns the validated routes into policy routes.
func (c *Config) PolicyRoutes(d RouteDeps) ([]*policy.Route, error) {
	routes := make([]*policy.Route, 0, len(c.Routes))
	for i, r := range c.Routes {
		at := fmt.Sprintf("routes[%d]", i)
		u, err := ParseUpstream(r.Upstream)
		if err != nil {
			return nil, &FieldError{Field: at + ".upstream", Msg: err.Error()}
		}
		pr := &policy.Route{
			Name:        r.Name,
			Host:        strings.ToLower(r.Host),
			Prefix:      r.Prefix,
			Upstream:    u,
			StripPrefix: r.StripPrefix,
			Tokens:      policy.TokenMode(r.Tokens),
			Methods:     r.Methods,
		}
		if pr.Tokens == "" {
			pr.Tokens = policy.TokensSigned
		}
		switch pr.Tokens {
		case policy.TokensRaw:
			pr.Verifier = tokens.RawVerifier{}
		case policy.TokensSigned, policy.TokensAny:
			if d.Signed == nil {
				return nil, &FieldError{Field: at + ".tokens", Msg: "signed tokens need the token authority's keys"}
			}
			pr.Verifier = d.Signed
			if pr.Tokens == policy.TokensAny {
				pr.Verifier = tokens.AnyVerifier{Signed: d.Signed}
			}
		}
		if r.TLS != nil {
			tc, err := r.TLS.ClientConfig()
			if err != nil {
				return nil, &FieldError{Field: at + ".tls", Msg: err.Error()}
			}
			if d.Transport == nil {
				return nil, &FieldError{Field: at + ".tls", Msg: "upstream TLS is not available here"}
			}
			pr.Transport = d.Transport(tc)
		}
		if r.EpochSource != nil {
			if d.OpenSource == nil {
				return nil, &FieldError{Field: at + ".epoch_source", Msg: "epoch sources are not available here"}
			}
			if pr.EpochSource, err = d.OpenSource(at+".epoch_source", r.EpochSource); err != nil {
				return nil, err
			}
		}
		if len(pr.Methods) == 0 {
			pr.Methods = nil // every method but the safe ones
		}
		if r.Resource != "" {
			if pr.Resource, err = policy.ParseTemplate(r.Resource); err != nil {
				return nil, &FieldError{Field: at + ".resource", Msg: err.Error()}
			}
		}
		routes = append(routes, pr)
	}
	return routes, nil
}
