package server

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/config"
)

// TestNewFailsCleanly: when a part cannot be built (here the store, whose
// directory does not exist), New returns the error and closes what it had
// built; it does not panic.
func TestNewFailsCleanly(t *testing.T) {
	c := config.Default()
	c.Store = filepath.Join(t.TempDir(), "missing", "dir", "fencegw.db")
	c.Routes = []config.Route{{Prefix: "/w/", Upstream: "http://127.0.0.1:1", Tokens: config.TokensRaw}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), c, Options{Logger: slog.New(slog.DiscardHandler)})
	if err == nil || s != nil || !strings.Contains(err.Error(), "fencegw.db") {
		t.Fatalf("New over a store that cannot open = %v, %v; want nil and an error naming the store", s, err)
	}
}
