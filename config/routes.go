package config

import (
	"fmt"
	"strings"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// PolicyRoutes turns the validated routes into policy routes.
func (c *Config) PolicyRoutes() ([]*policy.Route, error) {
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
			Tokens:      policy.TokensRaw,
			Verifier:    tokens.RawVerifier{},
			Methods:     r.Methods,
		}
		if len(pr.Methods) == 0 {
			pr.Methods = policy.DefaultFencedMethods
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
