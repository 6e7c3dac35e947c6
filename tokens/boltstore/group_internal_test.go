package boltstore

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fencegw/fencegw/tokens"
)

// TestGroupCommit: raises that arrive while a commit runs share the next
// one. With bbolt's writer lock held, 100 raises of distinct resources
// queue up; released, they commit in at most two transactions, every raise
// durable and each refusal reported to its own caller.
func TestGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fencegw.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Advance(ctx, "stale", 9); err != nil {
		t.Fatal(err)
	}
	before := s.commits.commits.Load()

	hold := make(chan struct{})
	held := make(chan struct{})
	go s.db.Update(func(*bolt.Tx) error { close(held); <-hold; return nil })
	<-held
	var wg sync.WaitGroup
	errs := make([]error, 101)
	for i := range 101 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 100 {
				_, errs[i] = s.Advance(ctx, "stale", 3)
				return
			}
			_, errs[i] = s.Advance(ctx, fmt.Sprintf("r-%d", i), int64(i+1))
		}()
	}
	time.Sleep(100 * time.Millisecond) // let them queue behind the held lock
	close(hold)
	wg.Wait()
	for i, err := range errs[:100] {
		if err != nil {
			t.Fatalf("raise %d: %v", i, err)
		}
	}
	if stale, ok := errs[100].(*tokens.StaleEpochError); !ok || stale.Current != 9 {
		t.Fatalf("stale raise: %v, want a *StaleEpochError at 9", errs[100])
	}
	if n := s.commits.commits.Load() - before; n < 1 || n > 2 {
		t.Fatalf("101 raises took %d commits, want 1 or 2", n)
	}
	s.Close()
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	for i := range 100 {
		if h, err := s2.Current(ctx, fmt.Sprintf("r-%d", i)); err != nil || h != int64(i+1) {
			t.Fatalf("after reopening, r-%d = %d, %v", i, h, err)
		}
	}
}

// TestGroupCommitOneProc: with one P, a commit's fsync stops every other
// goroutine, so a leader that committed at once would commit alone, and so
// would every leader after it. 32 writers raising one new resource after
// another (as 32 connections of first writes do) share commits: about one
// per round of 32 raises, where committing at once alternates a commit of
// one with a commit of the other 31.
func TestGroupCommitOneProc(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s, err := Open(filepath.Join(t.TempDir(), "fencegw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	const writers, each = 32, 20
	before := s.commits.commits.Load()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := s.Advance(ctx, fmt.Sprintf("r-%d-%d", w, i), 1); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := s.commits.commits.Load() - before; n > each*3/2 {
		t.Fatalf("%d raises took %d commits, want at most %d", writers*each, n, each*3/2)
	} else {
		t.Logf("%d raises, %d commits", writers*each, n)
	}
}
