package server

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/tokens/boltstore"
)

// embeddedConfig is a valid configuration over the embedded store file
// fencegw.db in dir.
func embeddedConfig(t *testing.T, dir string, newStore bool) config.Config {
	t.Helper()
	c := config.Default()
	c.Store = filepath.Join(dir, "fencegw.db")
	c.NewStore = newStore
	c.Routes = []config.Route{{Prefix: "/w/", Upstream: "http://127.0.0.1:1", Tokens: config.TokensRaw}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// newLogged runs New over c and returns the server (closed at the end of
// the test), what New logged at WARN and above, and the error.
func newLogged(t *testing.T, c config.Config) (*Server, string, error) {
	t.Helper()
	var logs bytes.Buffer
	s, err := New(context.Background(), c, Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err == nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, logs.String(), err
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestNewStoreFileWarns: a store file is created only with a WARN that
// names it, and a file that exists is opened without one.
func TestNewStoreFileWarns(t *testing.T) {
	c := embeddedConfig(t, t.TempDir(), false)
	s, logs, err := newLogged(t, c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, c.Store) {
		t.Fatalf("a new store file was created without a WARN naming it: %q", logs)
	}
	s.Close()
	if _, logs, err := newLogged(t, c); err != nil || logs != "" {
		t.Fatalf("reopening the store: %v; logged %q", err, logs)
	}
}

// TestLostStoreRefused: a missing store file beside a kept signing key is
// refused, and nothing is created.
func TestLostStoreRefused(t *testing.T) {
	c := embeddedConfig(t, t.TempDir(), false)
	s, _, err := newLogged(t, c)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.Remove(c.Store); err != nil {
		t.Fatal(err)
	}
	_, _, err = newLogged(t, c)
	var lost *LostStoreError
	if !errors.As(err, &lost) || lost.Path != c.Store || lost.KeyPath != keptKeyPath(c.Store) ||
		!strings.Contains(err.Error(), "--new-store") || !strings.Contains(err.Error(), "backup") {
		t.Fatalf("New over a lost store = %v, want a *LostStoreError naming it", err)
	}
	if _, err := os.Stat(c.Store); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused start created the store file: %v", err)
	}
}

// TestNewStoreRotatesKey: with the acknowledgment, a lost store is created
// anew and the kept key is retired, so tokens it signed no longer verify.
func TestNewStoreRotatesKey(t *testing.T) {
	dir := t.TempDir()
	c := embeddedConfig(t, dir, false)
	s, _, err := newLogged(t, c)
	if err != nil {
		t.Fatal(err)
	}
	old, _, err := s.auth.Issue("node-a", "r", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.auth.Verifier.Verify(context.Background(), old); err != nil {
		t.Fatalf("a fresh token does not verify: %v", err)
	}
	oldKey := readFile(t, keptKeyPath(c.Store))
	s.Close()
	if err := os.Remove(c.Store); err != nil {
		t.Fatal(err)
	}
	c.NewStore = true
	s, logs, err := newLogged(t, c)
	if err != nil {
		t.Fatalf("New with the acknowledgment: %v", err)
	}
	if readFile(t, keptKeyPath(c.Store)) == oldKey {
		t.Fatal("the kept signing key was not rotated")
	}
	retired, _ := filepath.Glob(keptKeyPath(c.Store) + ".retired-*")
	if len(retired) != 1 || readFile(t, retired[0]) != oldKey {
		t.Fatalf("retired keys %v, want the old key renamed aside", retired)
	}
	if !strings.Contains(logs, "retired") || !strings.Contains(logs, c.Store) {
		t.Fatalf("the rotation and the new file were not logged: %q", logs)
	}
	if _, err := s.auth.Verifier.Verify(context.Background(), old); err == nil {
		t.Fatal("a token signed before the store was lost still verifies")
	}
}

// TestEmptyStoreFileRefused: an existing empty store file is refused with
// an error naming it, even with the acknowledgment of a new store.
func TestEmptyStoreFileRefused(t *testing.T) {
	for _, ack := range []bool{false, true} {
		c := embeddedConfig(t, t.TempDir(), ack)
		if err := os.WriteFile(c.Store, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, err := newLogged(t, c)
		if !errors.Is(err, boltstore.ErrEmptyFile) || !strings.Contains(err.Error(), c.Store) {
			t.Fatalf("New over an empty store file (acknowledged: %t) = %v", ack, err)
		}
	}
}
