package config_test

import (
	"strings"
	"testing"

	"github.com/fencegw/fencegw/config"
)

// TestDuplicateAPIKeyHashRefused: two api_keys with the same SHA-256 (in
// any case of hex) are refused, naming both: otherwise one secret would be
// two keys, and the last would silently decide (an admin key turned into a
// restricted one).
func TestDuplicateAPIKeyHashRefused(t *testing.T) {
	const hash = "77cb5bb2159725c257b996d847de05701d82084a59f5d77814192b143a137644"
	yml := `
api_keys:
  - {name: ops, sha256: "` + hash + `", admin: true}
  - {name: other, sha256: "` + strings.Repeat("ab", 32) + `", leases: ["x"]}
  - {name: sweeper, sha256: "` + strings.ToUpper(hash) + `", leases: ["invoice-*"]}
routes: [{prefix: /a/, upstream: "http://127.0.0.1:9"}]`
	c, err := config.Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), `api_keys[2].sha256: the same key as api_keys[0] ("ops")`) {
		t.Fatalf("Validate = %v, want api_keys[2].sha256 refused as api_keys[0]'s", err)
	}
	if strings.Contains(err.Error(), "api_keys[1]") {
		t.Errorf("a distinct key refused: %v", err)
	}
}
