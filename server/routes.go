package server

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// routeDeps are what routes need beyond their configuration.
type routeDeps struct {
	// Signed verifies signed tokens; routes with tokens signed or any need it.
	Signed tokens.Verifier
	// OpenSource opens a route's epoch source; field names it in errors.
	OpenSource func(field string, s *config.EpochSource) (tokens.EpochSource, error)
	// Transport returns the transport toward an upstream with its own TLS.
	Transport func(*tls.Config) http.RoundTripper
}

// policyRoutes turns the validated routes of c into policy routes. Errors
// name the field.
func policyRoutes(c config.Config, d routeDeps) ([]*policy.Route, error) {
	routes := make([]*policy.Route, 0, len(c.Routes))
	for i, r := range c.Routes {
		at := fmt.Sprintf("routes[%d]", i)
		u, err := config.ParseUpstream(r.Upstream)
		if err != nil {
			return nil, &config.FieldError{Field: at + ".upstream", Msg: err.Error()}
		}
		pr := &policy.Route{
			Name:        r.Name,
			Host:        strings.ToLower(r.Host),
			Prefix:      r.Prefix,
			Upstream:    u,
			StripPrefix: r.StripPrefix,
			Tokens:      policy.TokenMode(r.Tokens),
			Methods:     r.Methods,
			Idempotency: policy.IdempotencyMode(r.Idempotency),
			RawOnLeased: r.RawOnLeased == config.RawOnLeasedAllow,
		}
		if pr.Tokens == "" {
			pr.Tokens = policy.TokensSigned
		}
		if pr.Idempotency == "" {
			pr.Idempotency = policy.IdempotencyOptional
		}
		switch pr.Tokens {
		case policy.TokensRaw:
			pr.Verifier = tokens.RawVerifier{}
		case policy.TokensSigned, policy.TokensAny:
			if d.Signed == nil {
				return nil, &config.FieldError{Field: at + ".tokens", Msg: "signed tokens need the token authority's keys"}
			}
			pr.Verifier = d.Signed
			if pr.Tokens == policy.TokensAny {
				pr.Verifier = tokens.AnyVerifier{Signed: d.Signed}
			}
		}
		if r.TLS != nil {
			tc, err := r.TLS.ClientConfig()
			if err != nil {
				return nil, &config.FieldError{Field: at + ".tls", Msg: err.Error()}
			}
			if d.Transport == nil {
				return nil, &config.FieldError{Field: at + ".tls", Msg: "upstream TLS is not available here"}
			}
			pr.Transport = d.Transport(tc)
		}
		if r.EpochSource != nil {
			if d.OpenSource == nil {
				return nil, &config.FieldError{Field: at + ".epoch_source", Msg: "epoch sources are not available here"}
			}
			if pr.EpochSource, err = d.OpenSource(at+".epoch_source", r.EpochSource); err != nil {
				return nil, err
			}
			pr.EpochSourceKind = r.EpochSource.Kind
		}
		if len(pr.Methods) == 0 {
			pr.Methods = nil // every method but the safe ones
		}
		if r.Resource != "" {
			if pr.Resource, err = tokens.ParseTemplate(r.Resource); err != nil {
				return nil, &config.FieldError{Field: at + ".resource", Msg: err.Error()}
			}
		}
		routes = append(routes, pr)
	}
	return routes, nil
}
