package config_test

import (
	"strings"
	"testing"

	"github.com/fencegw/fencegw/config"
)

// TestRawOnLeased: routes[].raw_on_leased is refuse (the default) or allow,
// and allow only where raw epochs are taken.
func TestRawOnLeased(t *testing.T) {
	for yml, want := range map[string]string{
		"{prefix: /a/, upstream: \"http://a\", tokens: raw}":                        "",
		"{prefix: /a/, upstream: \"http://a\", tokens: raw, raw_on_leased: allow}":  "",
		"{prefix: /a/, upstream: \"http://a\", tokens: any, raw_on_leased: refuse}": "",
		"{prefix: /a/, upstream: \"http://a\", tokens: raw, raw_on_leased: yes}":    "routes[0].raw_on_leased: must be refuse or allow",
		"{prefix: /a/, upstream: \"http://a\", raw_on_leased: allow}":               "routes[0].raw_on_leased: allow needs tokens: raw or any",
	} {
		c, err := config.Parse([]byte("routes: [" + yml + "]"))
		if err == nil {
			err = c.Validate()
		}
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: got %v, want %q", yml, err, want)
		}
	}
}
