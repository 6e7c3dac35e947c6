package boltstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestLockDelaySurvivesRestart: a grant that lapsed without a release keeps
// its lock-delay across a restart of the gateway (the process's monotonic
// deadlines are gone, the file's wall-clock expiry is kept), and a released
// one does not get one.
func TestLockDelaySurvivesRestart(t *testing.T) {
	f := fresh(t)
	s := f(t)
	ctx := context.Background()
	terms := tokens.Terms{TTL: time.Second, LockDelay: time.Hour}
	g, err := s.Acquire(ctx, "lapsed", "node-a", terms, tokens.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Acquire(ctx, "released", "node-a", terms, tokens.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "released", "node-a", r.Epoch, tokens.Caller{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if m, err := s.Mark(ctx, "lapsed"); err != nil || m.Lease.Left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the 1s grant did not lapse")
		}
	}
	s.Close()
	s2 := f(t)
	_, err = s2.Acquire(ctx, "lapsed", "node-b", tokens.Terms{TTL: time.Second}, tokens.Caller{})
	var d *tokens.LockDelayError
	if !errors.As(err, &d) || d.Epoch != g.Epoch || d.Left < 50*time.Minute {
		t.Fatalf("acquire after a restart within the lock-delay = %v, want *LockDelayError of about an hour", err)
	}
	if _, err := s2.Acquire(ctx, "released", "node-b", tokens.Terms{TTL: time.Second}, tokens.Caller{}); err != nil {
		t.Fatalf("acquire of a released lease after a restart: %v", err)
	}
}

func TestIdempotencyContract(t *testing.T) {
	storetest.RunIdempotency(t, fresh)
}

func TestAuditContract(t *testing.T) {
	storetest.RunAudit(t, fresh)
}

func TestLeaseRecordsContract(t *testing.T) {
	storetest.RunLeaseRecords(t, fresh)
}
