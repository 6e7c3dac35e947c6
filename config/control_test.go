package config_test

import (
	"strings"
	"testing"

	"github.com/fencegw/fencegw/config"
)

// TestControlBrowserKeys: control.allowed_hosts takes host names and
// addresses without port, control.allowed_origins web origins only; a bad
// entry is an error naming its index.
func TestControlBrowserKeys(t *testing.T) {
	for yml, want := range map[string]string{
		"control: {allowed_hosts: [fencegw.internal, 10.0.0.5, '::1', '[fe80::1]']}":   "",
		"control: {allowed_origins: ['https://ops.example', 'http://127.0.0.1:8081']}": "",
		"control: {allowed_hosts: [a, 'fencegw.internal:8081']}":                       "control.allowed_hosts[1]: \"fencegw.internal:8081\"",
		"control: {allowed_hosts: ['http://x']}":                                       "control.allowed_hosts[0]",
		"control: {allowed_hosts: ['']}":                                               "control.allowed_hosts[0]",
		"control: {allowed_origins: ['ops.example']}":                                  "control.allowed_origins[0]",
		"control: {allowed_origins: ['https://ops.example/ui/']}":                      "control.allowed_origins[0]",
		"control: {allowed_origins: ['null']}":                                         "control.allowed_origins[0]",
	} {
		c, err := config.Parse([]byte(yml + "\nroutes: [{prefix: /a/, upstream: \"http://127.0.0.1:9\"}]"))
		if err == nil {
			err = c.Validate()
		}
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v, want valid", yml, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want an error with %q", yml, err, want)
		}
	}
}
