package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/config"
)

// TestLeaseFlagsCheckedFirst: a lease duration out of the gateway's range,
// an empty holder or a bad --api exit 2 naming the flag, the value and what
// is allowed, before anything is dialled (nothing listens on port 1: a
// dial would fail with exit 1); values at the ends of the ranges pass the
// checks and reach the dial.
func TestLeaseFlagsCheckedFirst(t *testing.T) {
	down := "http://127.0.0.1:1"
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--ttl", "0s"}, []string{"--ttl 0s", "1s to 86400s", "whole milliseconds"}},
		{[]string{"--ttl", "999ms"}, []string{"--ttl 999ms", "1s to 86400s"}},
		{[]string{"--ttl", "86400001ms"}, []string{"--ttl 24h0m0.001s", "1s to 86400s"}},
		{[]string{"--ttl", "1500us"}, []string{"--ttl 1.5ms", "whole milliseconds"}},
		{[]string{"--ttl", "soon"}, []string{`"soon"`, "--ttl"}},
		{[]string{"--lock-delay=-1s"}, []string{"--lock-delay -1s", "0s to 3600s"}},
		{[]string{"--lock-delay", "3601s"}, []string{"--lock-delay 1h0m1s", "0s to 3600s"}},
		{[]string{"--lock-delay", "1.5ms"}, []string{"--lock-delay 1.5ms", "whole milliseconds"}},
		{[]string{"--holder", ""}, []string{`--holder ""`, "1 to 256 bytes"}},
		{[]string{"--holder", strings.Repeat("h", 257)}, []string{"1 to 256 bytes"}},
		{[]string{"--api", "ftp://127.0.0.1:1"}, []string{"--api", "want http:// or https://"}},
		{[]string{"--api", "127.0.0.1:8081"}, []string{"--api", "want http:// or https://"}},
	} {
		args := append([]string{"lease", "acquire", "jobs", "--holder", "a", "--api", down}, tc.args...)
		out, stderr, code := runCLI(t, args...)
		if code != exitUsage || out != "" || strings.Contains(stderr, "refused") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 before any dial", tc.args, code, out, stderr)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%q: stderr %q lacks %q", tc.args, stderr, w)
			}
		}
	}
	for _, ok := range [][]string{{"--ttl", "1s"}, {"--ttl", "86400s"}, {"--ttl", "1.001s"}, {"--lock-delay", "0s"}, {"--lock-delay", "1h"}} {
		args := append([]string{"lease", "acquire", "jobs", "--holder", "a", "--api", down}, ok...)
		if _, stderr, code := runCLI(t, args...); code != exitFailure || !strings.Contains(stderr, "refused") {
			t.Errorf("%q: exit %d, %s; want the flags accepted and the dial refused", ok, code, stderr)
		}
	}
	// Legacy single-dash long flags, as Go's flag package took them.
	if _, stderr, code := runCLI(t, "lease", "renew", "jobs", "-holder", "a", "-epoch", "0x8", "-api", down); code != exitUsage ||
		!strings.Contains(stderr, `"0x8" for "--epoch"`) {
		t.Errorf("-epoch 0x8: exit %d, %s", code, stderr)
	}
}

// TestAPIKeyRefusesBadInput: --name and --leases are checked by the
// configuration's rules (and control characters refused) before anything
// is printed: no key reaches stdout.
func TestAPIKeyRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--name", "a\nb", "--admin"}, "--name"},
		{[]string{"--name", "evil\n    admin: true", "--leases", "x"}, "--name"},
		{[]string{"--name", "tab\there", "--admin"}, "control characters"},
		{[]string{"--name", strings.Repeat("n", 257), "--admin"}, "256 bytes"},
		{[]string{"--name", "\xff", "--admin"}, "--name"},
		{[]string{"--name", "a", "--leases", "jobs\nadmin: true"}, "--leases"},
		{[]string{"--name", "a", "--leases", "["}, "--leases"},
		{[]string{"--name", "a", "--leases", "a,,b"}, "--leases"},
		{[]string{"--name", "a"}, "--leases or --admin"},
	} {
		out, stderr, code := runCLI(t, append([]string{"keys", "api-key"}, tc.args...)...)
		if code != exitUsage || out != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and one line naming %s", tc.args, code, out, stderr, tc.want)
		}
	}
}

// TestAPIKeySnippetIsSafe: names and patterns that YAML or the
// configuration's ${NAME} expansion would misread come back from the
// printed entry exactly as given.
func TestAPIKeySnippetIsSafe(t *testing.T) {
	for _, tc := range []struct {
		name, leases string
		admin        bool
	}{
		{name: "sweeper", leases: "invoice-*,report"},
		{name: `a: b # c "d" 'e'`, leases: "x: y,#z"},
		{name: "${HOME} $$ $x", leases: "${USER}-*"},
		{name: "- [x]", leases: "*", admin: true},
		{name: "0123", admin: true},
		{name: "ünïcödé ✓", leases: "ä?"},
		{name: "true", leases: "null,~"},
	} {
		args := []string{"keys", "api-key", "--name", tc.name}
		if tc.leases != "" {
			args = append(args, "--leases", tc.leases)
		}
		if tc.admin {
			args = append(args, "--admin")
		}
		out, stderr, code := runCLI(t, args...)
		if code != 0 || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "fgw_") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", tc.name, code, out, stderr)
			continue
		}
		c, err := config.ParseEnv([]byte(stderr), func(string) (string, bool) { return "EXPANDED", true })
		if err != nil || len(c.APIKeys) != 1 {
			t.Errorf("%q: the entry does not parse: %v\n%s", tc.name, err, stderr)
			continue
		}
		k := c.APIKeys[0]
		sum := sha256.Sum256([]byte(strings.TrimSpace(out)))
		var want []string
		if tc.leases != "" {
			want = strings.Split(tc.leases, ",")
		}
		if k.Name != tc.name || k.SHA256 != hex.EncodeToString(sum[:]) || k.Admin != tc.admin || strings.Join(k.Leases, "|") != strings.Join(want, "|") {
			t.Errorf("%q: read back %+v\n%s", tc.name, k, stderr)
		}
	}
}

// TestHelpHidesAPIKey: $FENCEGW_API_KEY is the --api-key default, but
// --help does not print it; $FENCEGW_API is shown as --api's default.
func TestHelpHidesAPIKey(t *testing.T) {
	cmd := exec.Command(binary, "lease", "acquire", "--help")
	cmd.Env = append(os.Environ(), "FENCEGW_API_KEY=fgw_secret-in-env", "FENCEGW_API=http://127.0.0.1:9999")
	out, err := cmd.Output()
	if err != nil || strings.Contains(string(out), "fgw_secret-in-env") || !strings.Contains(string(out), "http://127.0.0.1:9999") {
		t.Errorf("lease acquire --help: %v\n%s", err, out)
	}
}
