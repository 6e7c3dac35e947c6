package config_test

import (
	"strings"
	"testing"

	"github.com/fencegw/fencegw/config"
)

// TestLockDelayRange: lock_delay takes 0 to 1h in whole milliseconds, as
// every store keeps it; a finer value is refused, not rounded.
func TestLockDelayRange(t *testing.T) {
	for yml, want := range map[string]string{
		"lock_delay: 1ns":    "lock_delay: must be from 0s to 1h0m0s in whole milliseconds, got 1ns",
		"lock_delay: 1500us": "lock_delay: must be from 0s to 1h0m0s in whole milliseconds",
		"lock_delay: 61m":    "lock_delay: must be from 0s to 1h0m0s in whole milliseconds",
		"lock_delay: -1s":    "lock_delay: must be from 0s",
		"lock_delay: 1ms":    "",
		"lock_delay: 2.5s":   "",
		"lock_delay: 1h":     "",
		"lock_delay: 0s":     "",
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
