package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/config"
)

// TestIdempotencyTTLCoversUpstreamTimeout: an idempotency.ttl shorter than
// upstream_timeout is refused with an error naming both keys and values;
// equal is accepted.
func TestIdempotencyTTLCoversUpstreamTimeout(t *testing.T) {
	const routes = "\nroutes: [{prefix: /a/, upstream: \"http://127.0.0.1:9\"}]"
	c, err := config.Parse([]byte("upstream_timeout: 3m\nidempotency: {ttl: 1m}" + routes))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	var fe *config.FieldError
	if err == nil || !errors.As(err, &fe) || fe.Field != "idempotency.ttl" {
		t.Fatalf("ttl 1m, upstream_timeout 3m: Validate = %v, want an idempotency.ttl error", err)
	}
	for _, want := range []string{"idempotency.ttl", "upstream_timeout", "3m0s", "1m0s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	c, err = config.Parse([]byte("upstream_timeout: 2m\nidempotency: {ttl: 2m}" + routes))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("ttl equal to upstream_timeout: %v", err)
	}
}
