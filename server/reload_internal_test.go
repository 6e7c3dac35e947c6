package server

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/tokens/source"
)

// TestCloseClosesRetiredSources: the epoch sources a reload replaced are
// closed by Close even before their retirement timer fires, so nothing New
// or Reload opened outlives Close.
func TestCloseClosesRetiredSources(t *testing.T) {
	etcd := testetcd.Start(t, 1)
	c := config.Default()
	c.Store = filepath.Join(t.TempDir(), "fencegw.db")
	c.Routes = []config.Route{{Prefix: "/jobs/", Upstream: "http://127.0.0.1:1", Tokens: config.TokensRaw,
		Resource: "report", EpochSource: &config.EpochSource{Kind: "etcd", Endpoints: etcd.Endpoints(), Prefix: "/elections/"}}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), c, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := s.Reload(c); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.Lock()
	var replaced []*source.Coalesced
	for _, set := range append(s.retired, s.sources) {
		for _, c := range set.opened {
			replaced = append(replaced, c.(*source.Coalesced))
		}
	}
	s.mu.Unlock()
	if len(replaced) != 3 {
		t.Fatalf("%d sources open after two reloads, want 3 (two retiring, one in force)", len(replaced))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for i, src := range replaced {
		if err := src.Check(context.Background(), "report", 1); !errors.Is(err, source.ErrClosed) {
			t.Errorf("source %d after Close: %v, want source.ErrClosed", i, err)
		}
	}
}
