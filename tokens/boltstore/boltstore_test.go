package boltstore_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/boltstore"
	"github.com/fencegw/fencegw/tokens/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fresh is a file for a new store; each client opens it anew (a restart).
func fresh(t *testing.T) storetest.Factory {
	path := filepath.Join(t.TempDir(), "fencegw.db")
	return func(t *testing.T) tokens.Store {
		s, err := boltstore.Open(path)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

func TestContract(t *testing.T) {
	storetest.Run(t, fresh)
}

func TestSecondOpenRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fencegw.db")
	s, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := boltstore.Open(path); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Open = %v, want an 'in use' error", err)
	}
}

func TestClosedStoreUnavailable(t *testing.T) {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "fencegw.db"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := s.Ping(context.Background()); err == nil {
		t.Fatal("Ping on a closed store succeeded")
	}
}

func TestLeaseContract(t *testing.T) {
	storetest.RunLeases(t, fresh)
}
