package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/config"
)

// TestLeaseLimits: leases.max_live, leases.retention and
// api_keys[].max_leases have documented defaults and ranges, and a bad
// value is refused naming the field.
func TestLeaseLimits(t *testing.T) {
	d := config.Default()
	if d.Leases.MaxLive != config.DefaultMaxLiveLeases || d.Leases.Retention.D() != config.DefaultLeaseRetention {
		t.Fatalf("defaults: %+v", d.Leases)
	}
	if config.DefaultMaxLiveLeases != 10_000 || config.DefaultLeaseRetention != 24*time.Hour {
		t.Fatalf("documented defaults changed: %d %s", config.DefaultMaxLiveLeases, config.DefaultLeaseRetention)
	}
	const key = "api_keys: [{name: a, sha256: \"" + hex64 + "\", leases: [\"a-*\"], max_leases: %s}]\n"
	for yml, want := range map[string]string{
		"leases: {max_live: 0}":        "leases.max_live: must be from 1 to 10000000, got 0",
		"leases: {max_live: 10000001}": "leases.max_live: must be from 1 to 10000000",
		"leases: {max_live: 1}":        "",
		"leases: {retention: 30s}":     "leases.retention: must be from 1m to 8760h, got 30s",
		"leases: {retention: 8761h}":   "leases.retention: must be from 1m to 8760h",
		"leases: {retention: 1m}":      "",
		sprintf(key, "-1"):             "api_keys[0].max_leases: must be from 0 (no cap of its own) to leases.max_live (10000), got -1",
		sprintf(key, "10001"):          "api_keys[0].max_leases: must be from 0 (no cap of its own) to leases.max_live (10000), got 10001",
		sprintf(key, "0"):              "",
		sprintf(key, "100"):            "",
	} {
		c, err := config.Parse([]byte(yml + "\nroutes: [{prefix: /a/, upstream: \"http://127.0.0.1:9\"}]"))
		if err == nil {
			err = c.Validate()
		}
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: got %v, want %q", yml, err, want)
		}
	}
}

const hex64 = "0000000000000000000000000000000000000000000000000000000000000000"

func sprintf(format, arg string) string { return strings.Replace(format, "%s", arg, 1) }
