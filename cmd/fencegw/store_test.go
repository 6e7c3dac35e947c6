package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencegw/fencegw/wire"
)

// refusedStart runs `fencegw serve` with args, expecting it to refuse to
// start: it fails t unless the process exits non-zero within a minute, and
// returns its output.
func refusedStart(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args = append([]string{"serve", "--listen", freeAddr(t), "--api-listen", freeAddr(t)}, args...)
	out, err := exec.CommandContext(ctx, binary, args...).CombinedOutput()
	if code := exitCode(err); code <= 0 {
		t.Fatalf("fencegw %s: exit %d (%v), want a refusal\n%s", strings.Join(args, " "), code, err, out)
	}
	return string(out)
}

// mustSay fails t unless out contains every one of want and no sign of a
// Go panic.
func mustSay(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("output does not say %q:\n%s", w, out)
		}
	}
	for _, crash := range []string{"panic", "goroutine"} {
		if strings.Contains(out, crash) {
			t.Fatalf("output shows a crash (%q):\n%s", crash, out)
		}
	}
}

// stop sends SIGTERM to p and waits for a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d after SIGTERM\n%s", code, p.stderr.String())
	}
}

// TestEmptyStoreFileRefusedAtStart: an existing zero-length store file is
// not started afresh: the process exits non-zero naming the file.
func TestEmptyStoreFileRefusedAtStart(t *testing.T) {
	db := writeFile(t, t.TempDir(), "s.db", nil)
	out := refusedStart(t, "--store", db, "--route", "/w/=http://127.0.0.1:9")
	mustSay(t, out, db, "empty", "backup")
	if info, err := os.Stat(db); err != nil || info.Size() != 0 {
		t.Fatalf("the refused file changed: %v, %v", info, err)
	}
}

// TestLostStoreNeedsAcknowledgment deletes the store of a gateway whose
// generated signing key is kept beside it: the next start is refused; with
// --new-store it starts on a new store with a rotated key, so a token
// signed before the loss is refused 401.
func TestLostStoreNeedsAcknowledgment(t *testing.T) {
	up := okUpstream(t)
	db := filepath.Join(t.TempDir(), "s.db")
	args := []string{"--store", db, "--signed-route", "/s/=" + up.URL}
	p := start(t, args...)
	var g struct {
		Epoch wire.Epoch `json:"epoch"`
		Token string     `json:"token"`
	}
	postJSON(t, p.api+"/v1/leases/r/acquire", `{"holder":"node-a","ttl_seconds":30}`, &g)
	if s := post(t, p.proxy+"/s/x", g.Token, ""); s != http.StatusNoContent {
		t.Fatalf("a write with the fresh token = %d", s)
	}
	p.stop(t)
	if err := os.Remove(db); err != nil {
		t.Fatal(err)
	}

	out := refusedStart(t, args...)
	mustSay(t, out, db, "missing", "signing key", "--new-store")
	if _, err := os.Stat(db); err == nil {
		t.Fatal("a refused start created the store file")
	}

	p = start(t, append(args, "--new-store")...)
	mustSay(t, p.stderr.String(), "retired", db)
	if s := post(t, p.proxy+"/s/x", g.Token, ""); s != http.StatusUnauthorized {
		t.Fatalf("a token signed before the store was lost = %d, want 401", s)
	}
	postJSON(t, p.api+"/v1/leases/r/acquire", `{"holder":"node-a","ttl_seconds":30}`, &g)
	if s := post(t, p.proxy+"/s/x", g.Token, ""); s != http.StatusNoContent {
		t.Fatalf("a write with a token of the new store = %d", s)
	}
}

// TestCorruptStoreRefusedAtStart corrupts the pages of a store after its
// meta pages: the process exits non-zero with an error naming the file
// and the way to restore it, and no stack trace.
func TestCorruptStoreRefusedAtStart(t *testing.T) {
	up := okUpstream(t)
	db := filepath.Join(t.TempDir(), "s.db")
	args := []string{"--store", db, "--route", "/w/=" + up.URL}
	p := start(t, args...)
	if s := post(t, p.proxy+"/w/x", "7", "r"); s != http.StatusNoContent {
		t.Fatalf("a raw write = %d", s)
	}
	p.stop(t)
	data, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	ps := os.Getpagesize()
	for i := 2 * ps; i < len(data); i++ {
		data[i] = 0xa5
	}
	if err := os.WriteFile(db, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out := refusedStart(t, args...)
	mustSay(t, out, db, "corrupt", "backup")
}
