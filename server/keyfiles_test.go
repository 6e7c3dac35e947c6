//go:build unix

package server

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/tokens/signed"
)

// TestReadableKeyFileRefused: a private key file that users other than
// the gateway's may read (world-readable, or group-readable by a group the
// process is not in) is refused at start, naming the field and the mode;
// 0600, and 0640 for the process's own group (a Kubernetes Secret with
// fsGroup), start; insecure_key_file_permissions turns the refusal into a
// warning.
func TestReadableKeyFileRefused(t *testing.T) {
	k, err := signed.GenerateKey(signed.AlgEdDSA)
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, err := k.MarshalPrivatePEM()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		mode     os.FileMode
		otherGID bool
		override bool
		want     string // "" starts; else a substring of the error or the warning
	}{
		{"owner only", 0o600, false, false, ""},
		{"own group", 0o640, false, false, ""},
		{"world-readable", 0o644, false, false, "signing.key_file: " + "%s is readable by every user (mode 0644)"},
		{"world-writable", 0o602, false, false, "(mode 0602)"},
		{"another group", 0o640, true, false, "is readable by group 4242, which this process is not in (mode 0640)"},
		{"world-readable, overridden", 0o644, false, true, "warn:readable by every user"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "signing-key.pem")
			if err := os.WriteFile(path, pemBytes, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, c.mode); err != nil {
				t.Fatal(err)
			}
			if c.otherGID {
				if err := os.Chown(path, -1, 4242); err != nil || inGroup(4242) {
					t.Skipf("cannot give the file a group this process is not in: %v", err)
				}
			}
			cfg := config.Default()
			cfg.Store = filepath.Join(dir, "fencegw.db")
			cfg.Signing.KeyFile = path
			cfg.InsecureKeyFilePermissions = c.override
			cfg.Routes = []config.Route{{Prefix: "/w/", Upstream: "http://127.0.0.1:1", Tokens: config.TokensRaw}}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			s, err := New(context.Background(), cfg, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if s != nil {
				s.Close()
			}
			want := strings.ReplaceAll(c.want, "%s", path)
			switch {
			case c.want == "":
				if err != nil {
					t.Fatalf("New: %v", err)
				}
			case strings.HasPrefix(want, "warn:"):
				if err != nil || !strings.Contains(logs.String(), strings.TrimPrefix(want, "warn:")) {
					t.Fatalf("New: %v; logs %s; want a start with a warning", err, logs.String())
				}
			case err == nil || !strings.Contains(err.Error(), want):
				t.Fatalf("New: %v, want an error with %q", err, want)
			}
		})
	}
}
