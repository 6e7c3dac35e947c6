package server

import (
	"testing"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// TestPolicyRoutesFromConfig builds the routes of the annotated example
// configuration (its epoch source aside: it would dial out).
func TestPolicyRoutesFromConfig(t *testing.T) {
	c, err := config.Parse([]byte(config.Example))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Routes[2].EpochSource = nil
	routes, err := policyRoutes(c, routeDeps{Signed: tokens.RawVerifier{}})
	if err != nil {
		t.Fatal(err)
	}
	email, tenants, jobs := routes[0], routes[1], routes[2]
	if len(routes) != 3 || tenants.Upstream.Host != "payments.example.com" || !tenants.StripPrefix || email.StripPrefix {
		t.Fatalf("routes = %+v", routes)
	}
	// Listed methods are the fenced ones; without a list every method but
	// GET, HEAD and OPTIONS is.
	if email.Fenced("GET") || email.Fenced("PURGE") || !email.Fenced("DELETE") {
		t.Fatalf("email route fences %v", email.Methods)
	}
	if tenants.Fenced("GET") || tenants.Fenced("OPTIONS") || !tenants.Fenced("PURGE") || !tenants.Fenced("POST") {
		t.Fatalf("tenants route fences %v", tenants.Methods)
	}
	if jobs.Host != "jobs.example.com" || jobs.Tokens != policy.TokensRaw || email.Tokens != policy.TokensSigned {
		t.Fatalf("routes = %+v", routes)
	}
}

// FuzzValidConfigBuildsRoutes: whatever configuration validates builds its
// routes.
func FuzzValidConfigBuildsRoutes(f *testing.F) {
	f.Add([]byte("routes: [{prefix: /a/, upstream: \"http://a\"}]"))
	f.Add([]byte("routes: [{prefix: /t, upstream: \"http://a/b\", tokens: raw, resource: \"t-{segment:1}\", strip_prefix: true}]"))
	f.Add([]byte("routes: [{prefix: /h/, upstream: \"http://a\", tokens: any, resource: \"x-{header:X-T}\", methods: [PUT]}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse(data)
		if err != nil || c.Validate() != nil {
			return
		}
		for i := range c.Routes {
			c.Routes[i].EpochSource = nil // sources dial out; their settings are validated alone
			c.Routes[i].TLS = nil
		}
		if _, err := policyRoutes(c, routeDeps{Signed: tokens.RawVerifier{}}); err != nil {
			t.Fatalf("valid config gives no routes: %v", err)
		}
	})
}
