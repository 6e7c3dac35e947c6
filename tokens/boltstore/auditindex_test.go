package boltstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/boltstore"
)

// auditBenchEntries returns n refusals over 1000 resources, one interval
// (a second) per 100 entries.
func auditBenchEntries(n int) []tokens.AuditEntry {
	t0 := time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)
	out := make([]tokens.AuditEntry, n)
	for i := range out {
		start := t0.Add(time.Duration(i/100) * time.Second)
		res := fmt.Sprintf("res-%d", i%1000)
		out[i] = tokens.AuditEntry{Stream: tokens.AuditRefusals, ID: tokens.AuditID(start, res, fmt.Sprint(i)),
			Resource: res, Kind: "missing", Replica: "gw-1", Route: "/api/", Status: 428,
			First: start, Last: start.Add(time.Second / 2), Count: 1}
	}
	return out
}

// TestAuditIndexBuiltAtOpen: a file whose audit was written without an
// index (before the index existed) is indexed once when opened, so a
// filtered list finds its entries.
func TestAuditIndexBuiltAtOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fencegw.db")
	s, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	entries := auditBenchEntries(500)
	if err := s.PutAudit(context.Background(), entries); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Make it a file of before the index.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("audit-index-refusals")) }); err != nil {
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
}

// BenchmarkAuditFilteredList: a query by resource, and one by resource and
// time, over 110,000 entries (110 per resource).
func BenchmarkAuditFilteredList(b *testing.B) {
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "fencegw.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	entries := auditBenchEntries(110_000)
	for i := 0; i < len(entries); i += 5000 {
		if err := s.PutAudit(context.Background(), entries[i:min(i+5000, len(entries))]); err != nil {
			b.Fatal(err)
		}
	}
	benchAuditQueries(b, s, entries)
}

// benchAuditQueries runs the benchmark's queries against s.
func benchAuditQueries(b *testing.B, s tokens.AuditStore, entries []tokens.AuditEntry) {
	mid := entries[len(entries)/2].First
	for _, c := range []struct {
		name string
		q    tokens.AuditQuery
		want int
	}{
		{"resource", tokens.AuditQuery{Resource: "res-421"}, 110},
		{"resource+window", tokens.AuditQuery{Resource: "res-421", Since: mid, Until: mid.Add(100 * time.Second)}, 10},
		{"unknown-resource", tokens.AuditQuery{Resource: "nothing"}, 0},
		{"kind", tokens.AuditQuery{Kind: "missing", Limit: 100}, 100},
		// No index serves a holder: the whole log is read, as every
		// filtered query was before the index.
		{"holder-full-scan", tokens.AuditQuery{Holder: "nobody"}, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			q := c.q
			q.Stream = tokens.AuditRefusals
			if q.Limit == 0 {
				q.Limit = 1000
			}
			for b.Loop() {
				got, err := s.ListAudit(context.Background(), q)
				if err != nil || len(got) != c.want {
					b.Fatalf("%d entries, %v; want %d", len(got), err, c.want)
				}
			}
		})
	}
}
