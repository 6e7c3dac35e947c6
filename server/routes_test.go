package server

import (
	"testing"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/tokens"
)

func TestPolicyRoutesFromConfig(t *testing.T) {
	c, err := config.Parse([]byte(`
routes:
  - prefix: "/email/"
    upstream: "http://127.0.0.1:9000"
    tokens: raw
    resource: "invoice-sweeper"
  - prefix: "/tenants/"
    host: api.example.com
    upstream: "https://mail.example.com/v1"
    resource: "tenant-{segment:1}"
    methods: [POST, GET]
    strip_prefix: true
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	routes, err := policyRoutes(c, routeDeps{Signed: tokens.RawVerifier{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) != 2 || routes[1].Upstream.Host != "mail.example.com" || !routes[1].Fenced("GET") || routes[0].Fenced("GET") {
		t.Fatalf("routes = %+v", routes)
	}
	if !routes[0].Fenced("PURGE") || !routes[1].StripPrefix || routes[1].Host != "api.example.com" {
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
