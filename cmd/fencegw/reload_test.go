package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testpg"
)

// TestSIGHUPReloadsRoutes: a good reload swaps routes without dropping the
// process; a bad one keeps the routes in force and says why.
func TestSIGHUPReloadsRoutes(t *testing.T) {
	up := okUpstream(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gw.yaml")
	routes := func(extra string) []byte {
		return []byte(fmt.Sprintf("store: %q\nroutes:\n  - prefix: /a/\n    upstream: %q\n    tokens: raw\n%s",
			filepath.Join(dir, "s.db"), up.URL, extra))
	}
	os.WriteFile(cfg, routes(""), 0o600)
	p := start(t, "--config", cfg)
	if s := post(t, p.proxy+"/b/x", "1", "r"); s != http.StatusNotFound {
		t.Fatalf("/b/ before the reload = %d", s)
	}
	os.WriteFile(cfg, routes(fmt.Sprintf("  - prefix: /b/\n    upstream: %q\n    tokens: raw\n", up.URL)), 0o600)
	p.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for post(t, p.proxy+"/b/x", "1", "r") != http.StatusNoContent {
		if time.Now().After(deadline) {
			t.Fatalf("/b/ never served after SIGHUP:\n%s", p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	os.WriteFile(cfg, routes("  - prefix: /c/\n    upstream: not-a-url\n"), 0o600)
	p.cmd.Process.Signal(syscall.SIGHUP)
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(p.stderr.String(), "reload refused") {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal logged:\n%s", p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(p.stderr.String(), "routes[1].upstream: not an absolute http(s) URL") {
		t.Fatalf("the refusal does not say why:\n%s", p.stderr.String())
	}
	for _, path := range []string{"/a/x", "/b/x"} {
		if s := post(t, p.proxy+path, "1", "r"); s != http.StatusNoContent {
			t.Fatalf("%s after a bad reload = %d", path, s)
		}
	}
}

// TestLimitsAnswer: each limit answers with its status: headers over
// max_header_bytes 431, a body over max_body_bytes 413, a slow upstream 504.
func TestLimitsAnswer(t *testing.T) {
	slow := make(chan struct{})
	defer close(slow)
	up := okUpstream(t)
	slowUp := newSlowUpstream(t, slow)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gw.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`store: %q
max_header_bytes: 4096
max_body_bytes: 1024
upstream_response_header_timeout: 300ms
routes:
  - {prefix: /a/, upstream: %q, tokens: raw}
  - {prefix: /slow/, upstream: %q, tokens: raw}
`, filepath.Join(dir, "s.db"), up.URL, slowUp)), 0o600)
	p := start(t, "--config", cfg)
	req, _ := http.NewRequest("GET", p.proxy+"/a/x", nil)
	req.Header.Set("X-Big", strings.Repeat("x", 16<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("16 KiB header = %d, want 431", resp.StatusCode)
	}
	req, _ = http.NewRequest("POST", p.proxy+"/a/x", strings.NewReader(strings.Repeat("x", 2048)))
	req.Header.Set("Fencing-Token", "1")
	req.Header.Set("Fencing-Resource", "r")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("2 KiB body = %d, want 413", resp.StatusCode)
	}
	if s := post(t, p.proxy+"/slow/x", "1", "r"); s != http.StatusGatewayTimeout {
		t.Fatalf("slow upstream = %d, want 504", s)
	}
}

func newSlowUpstream(t *testing.T, release chan struct{}) string {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// TestSIGHUPReloadOpensSourcesLate: a reload long after start-up still
// opens the new routes' epoch sources (each open has its own deadline), and
// the sources of the replaced routes are closed.
func TestSIGHUPReloadOpensSourcesLate(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("psql"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("psql is required")
		}
		t.Skip("psql not installed")
	}
	dsn := testpg.Shared(t).NewDatabase(t)
	psql(t, dsn, `CREATE TABLE leader_lease (name text PRIMARY KEY, holder text, epoch bigint NOT NULL DEFAULT 0,
  expires_at timestamptz NOT NULL DEFAULT '-infinity');
INSERT INTO leader_lease VALUES ('jobs', 'node-a', 3, now() + interval '1 hour');`)
	with := func(app string) string {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		return dsn + sep + "application_name=" + app
	}
	sessions := func(app string) string {
		return psql(t, dsn, "SELECT count(*) FROM pg_stat_activity WHERE application_name = '"+app+"'")
	}
	up := okUpstream(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gw.yaml")
	write := func(prefixes ...string) {
		var b strings.Builder
		fmt.Fprintf(&b, "store: %q\nstore_timeout: 1s\nroutes:\n", filepath.Join(dir, "s.db"))
		for _, p := range prefixes {
			fmt.Fprintf(&b, "  - prefix: %q\n    upstream: %q\n    tokens: raw\n    resource: jobs\n"+
				"    epoch_source: {kind: postgres, dsn: %q}\n", p, up.URL, with("src"+strings.Trim(p, "/")))
		}
		os.WriteFile(cfg, []byte(b.String()), 0o600)
	}
	write("/a/")
	started := time.Now()
	p := start(t, "--config", cfg)
	if s := post(t, p.proxy+"/a/x", "3", ""); s != http.StatusNoContent {
		t.Fatalf("write through the first source = %d", s)
	}
	if n := sessions("srca"); n == "0" {
		t.Fatal("the first source holds no session")
	}
	// The start-up deadline was 30 s; reload after it has passed.
	time.Sleep(time.Until(started.Add(31 * time.Second)))
	write("/b/")
	p.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for post(t, p.proxy+"/b/x", "3", "") != http.StatusNoContent {
		if time.Now().After(deadline) || strings.Contains(p.stderr.String(), "reload refused") {
			t.Fatalf("/b/ never served after a late SIGHUP:\n%s", p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	deadline = time.Now().Add(15 * time.Second)
	for sessions("srca") != "0" {
		if time.Now().After(deadline) {
			t.Fatalf("the replaced route's source still holds %s sessions", sessions("srca"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
