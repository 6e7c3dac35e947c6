package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/config"
)

// TestConnBudgetDefaultsAndRanges: the connection budget's keys have their
// documented defaults, and a value out of range is an error naming the key
// and the range.
func TestConnBudgetDefaultsAndRanges(t *testing.T) {
	d := config.Default()
	if d.BodyTimeout.D() != 30*time.Second || d.MinBodyRate != 64<<10 || d.WriteTimeout.D() != 30*time.Second || d.MaxConnections != 10000 {
		t.Fatalf("defaults: body_timeout %s, min_body_rate %d, write_timeout %s, max_connections %d",
			d.BodyTimeout.D(), d.MinBodyRate, d.WriteTimeout.D(), d.MaxConnections)
	}
	for yml, want := range map[string]string{
		"body_timeout: 0s":         "body_timeout: must be from 1ms to 1h0m0s, got 0s",
		"body_timeout: 2h":         "body_timeout: must be from 1ms to 1h0m0s, got 2h0m0s",
		"min_body_rate: -1":        "min_body_rate: must be from 0 to 1073741824 bytes per second, got -1",
		"write_timeout: 0s":        "write_timeout: must be from 1ms to 1h0m0s, got 0s",
		"max_connections: 0":       "max_connections: must be from 1 to 1000000, got 0",
		"max_connections: 2000000": "max_connections: must be from 1 to 1000000, got 2000000",
		"min_body_rate: 0":         "",
		"body_timeout: 1ms":        "",
		"max_connections: 1000000": "",
		"write_timeout: 1h":        "",
	} {
		c, err := config.Parse([]byte(yml + "\nroutes: [{prefix: /a/, upstream: \"http://127.0.0.1:9\"}]"))
		if err == nil {
			err = c.Validate()
		}
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v, want valid", yml, err)
			}
			continue
		}
		var fe *config.FieldError
		if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &fe) {
			t.Errorf("%s\n  got  %v\n  want a FieldError with %q", yml, err, want)
		}
	}
}
