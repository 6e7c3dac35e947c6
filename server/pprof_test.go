package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/fencegw/fencegw/config"
)

// TestPprofIsOptInAndAdminOnly: /debug/pprof/ is served only with
// telemetry.pprof, and then only to admin keys.
func TestPprofIsOptInAndAdminOnly(t *testing.T) {
	hash := func(k string) string { h := sha256.Sum256([]byte(k)); return hex.EncodeToString(h[:]) }
	for _, tc := range []struct {
		pprof bool
		key   string
		want  int
	}{
		{false, "admin-key", http.StatusNotFound},
		{true, "admin-key", http.StatusOK},
		{true, "jobs-key", http.StatusForbidden},
		{true, "", http.StatusUnauthorized},
	} {
		c := config.Default()
		// httptest.NewRequest names the host example.com.
		c.Control.AllowedHosts = []string{"example.com"}
		c.Store = filepath.Join(t.TempDir(), "fencegw.db")
		c.Telemetry.Pprof = tc.pprof
		c.Routes = []config.Route{{Prefix: "/w/", Upstream: "http://127.0.0.1:1", Tokens: config.TokensRaw}}
		c.APIKeys = []config.APIKey{{Name: "ops", SHA256: hash("admin-key"), Admin: true},
			{Name: "jobs", SHA256: hash("jobs-key"), Leases: []string{"jobs-*"}}}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		s, err := New(context.Background(), c, Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/goroutine?debug=1"} {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			rec := httptest.NewRecorder()
			s.Control().ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("pprof %v, key %q: GET %s = %d, want %d", tc.pprof, tc.key, path, rec.Code, tc.want)
			}
		}
		s.Close()
	}
}
