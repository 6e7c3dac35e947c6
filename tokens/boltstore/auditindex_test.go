package boltstore_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/boltstore"
	"github.com/fencegw/fencegw/tokens/storetest"
)

// TestAuditIndexBuiltAtOpen: a file whose audit was written without an
// index (before the index existed) is indexed once when opened, every log
// (junk too), so a filtered list finds its entries.
func TestAuditIndexBuiltAtOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fencegw.db")
	s, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	entries := storetest.AuditBenchEntries(500)
	junk := storetest.AuditBenchEntries(40)
	for i := range junk {
		junk[i].Stream, junk[i].Resource = tokens.AuditJunk, ""
	}
	if err := s.PutAudit(context.Background(), append(slices.Clone(entries), junk...)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Make it a file of before the index.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket([]byte("audit-index-refusals")); err != nil {
			return err
		}
		return tx.DeleteBucket([]byte("audit-index-junk"))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err = boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.CountAuditIndex(context.Background(), tokens.AuditRefusals); err != nil || n != 2*len(entries) {
		t.Fatalf("index keys after open: %d, %v; want %d", n, err, 2*len(entries))
	}
	got, err := s.ListAudit(context.Background(), tokens.AuditQuery{Stream: tokens.AuditRefusals, Resource: "res-7", Limit: 1000})
	if err != nil || len(got) != 1 || got[0].Resource != "res-7" {
		t.Fatalf("list by resource after open: %v, %v", got, err)
	}
	if n, err := s.CountAuditIndex(context.Background(), tokens.AuditJunk); err != nil || n != 2*len(junk) {
		t.Fatalf("junk index keys after open: %d, %v; want %d", n, err, 2*len(junk))
	}
	got, err = s.ListAudit(context.Background(), tokens.AuditQuery{Stream: tokens.AuditJunk, Kind: "missing", Limit: 1000})
	if err != nil || len(got) != len(junk) {
		t.Fatalf("junk by decision after open: %d entries, %v; want %d", len(got), err, len(junk))
	}
}

// BenchmarkAuditFilteredList: filtered queries over 110,000 entries (110
// per resource).
func BenchmarkAuditFilteredList(b *testing.B) {
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "fencegw.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	entries := storetest.AuditBenchEntries(110_000)
	storetest.FillAudit(b, s, entries)
	storetest.BenchAuditQueries(b, s, entries)
}
