package etcdstore_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/storetest"
)

// TestAuditIndexBackfill: entries written before the index (no index
// keys, no version key) are found by a filtered query: the first one
// backfills the index once and records it in the version key.
func TestAuditIndexBackfill(t *testing.T) {
	c := testetcd.Start(t, 1)
	const prefix = "/backfill/"
	cli := c.Client(t)
	entries := storetest.AuditBenchEntries(500)
	for _, e := range entries {
		v, _ := json.Marshal(e)
		if _, err := cli.Put(timeout(t, 10*time.Second), prefix+"\x00audit/refusals/"+e.ID, string(v)); err != nil {
			t.Fatal(err)
		}
	}
	s := open(t, c, prefix)
	list := func(when string) {
		t.Helper()
		got, err := s.ListAudit(context.Background(), tokens.AuditQuery{Stream: tokens.AuditRefusals, Resource: "res-7", Limit: 1000})
		if err != nil || len(got) != 1 || got[0].Resource != "res-7" {
			t.Fatalf("list by resource %s: %v, %v", when, got, err)
		}
		names, err := s.ListAuditResources(context.Background(), tokens.AuditResourceQuery{Prefix: "res-49", Limit: 100})
		if err != nil || len(names) != 11 || names[0] != "res-49" || names[10] != "res-499" {
			t.Fatalf("resources %s: %q, %v", when, names, err)
		}
	}
	list("before the backfill") // starts it in the background
	if err := s.IndexAudit(timeout(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	list("after the backfill")
	if n, err := s.CountAuditIndex(context.Background(), tokens.AuditRefusals); err != nil || n != 2*len(entries) {
		t.Fatalf("index keys after the backfill: %d, %v; want %d", n, err, 2*len(entries))
	}
	if r, err := cli.Get(timeout(t, 10*time.Second), prefix+"\x00auditidx2-version"); err != nil || len(r.Kvs) != 1 {
		t.Fatalf("version key: %v, %v", r, err)
	}
	if r, err := cli.Get(timeout(t, 10*time.Second), prefix+"\x00auditidx2-backfill/", clientv3.WithPrefix()); err != nil || len(r.Kvs) != 0 {
		t.Fatalf("backfill cursors left: %v, %v", r, err)
	}
}

// BenchmarkAuditFilteredList: filtered queries over 110,000 entries (110
// per resource) in a one-member embedded etcd.
func BenchmarkAuditFilteredList(b *testing.B) {
	c := testetcd.Start(b, 1)
	s := open(b, c, "/bench/")
	entries := storetest.AuditBenchEntries(110_000)
	storetest.FillAudit(b, s, entries)
	if err := s.IndexAudit(timeout(b, time.Minute)); err != nil {
		b.Fatal(err)
	}
	storetest.BenchAuditQueries(b, s, entries)
}

// TestAuditIndexBackfillResumes: a backfill that was interrupted goes on
// after the last ID it recorded instead of starting over.
func TestAuditIndexBackfillResumes(t *testing.T) {
	c := testetcd.Start(t, 1)
	const prefix = "/resume/"
	cli := c.Client(t)
	entries := storetest.AuditBenchEntries(300)
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		v, _ := json.Marshal(e)
		if _, err := cli.Put(timeout(t, 10*time.Second), prefix+"\x00audit/refusals/"+e.ID, string(v)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	slices.Sort(ids)
	// As if a run had indexed the first 200 IDs and stopped.
	if _, err := cli.Put(timeout(t, 10*time.Second), prefix+"\x00auditidx2-backfill/refusals", ids[199]); err != nil {
		t.Fatal(err)
	}
	s := open(t, c, prefix)
	if err := s.IndexAudit(timeout(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	// Three index keys (resource, kind, time) per entry indexed.
	r, err := cli.Get(timeout(t, 10*time.Second), prefix+"\x00auditidx2/refusals/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || r.Count != 3*100 {
		t.Fatalf("index keys: %v, %v; want %d (the 100 entries after the cursor)", r, err, 3*100)
	}
}

// TestAuditIndexBackfillJunk: a store whose audit holds only junk entries
// written before the index is not taken for a new one: the junk log is
// backfilled like the others, and a query by decision finds its entries.
func TestAuditIndexBackfillJunk(t *testing.T) {
	c := testetcd.Start(t, 1)
	const prefix = "/junk/"
	cli := c.Client(t)
	entries := storetest.AuditBenchEntries(120)
	for i := range entries {
		e := &entries[i]
		e.Stream, e.Resource = tokens.AuditJunk, ""
		if i%2 == 1 {
			e.Kind = "invalid"
		}
		v, _ := json.Marshal(e)
		if _, err := cli.Put(timeout(t, 10*time.Second), prefix+"\x00audit/junk/"+e.ID, string(v)); err != nil {
			t.Fatal(err)
		}
	}
	s := open(t, c, prefix)
	list := func(when string) {
		t.Helper()
		got, err := s.ListAudit(context.Background(), tokens.AuditQuery{Stream: tokens.AuditJunk, Kind: "invalid", Limit: 1000})
		if err != nil || len(got) != len(entries)/2 {
			t.Fatalf("junk by decision %s: %d entries, %v; want %d", when, len(got), err, len(entries)/2)
		}
		names, err := s.ListAuditResources(context.Background(), tokens.AuditResourceQuery{Limit: 100})
		if err != nil || len(names) != 0 {
			t.Fatalf("resources %s: %q, %v; want none (junk names no resource)", when, names, err)
		}
	}
	list("before the backfill")
	if err := s.IndexAudit(timeout(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	list("after the backfill")
	if n, err := s.CountAuditIndex(context.Background(), tokens.AuditJunk); err != nil || n != 2*len(entries) {
		t.Fatalf("junk index keys after the backfill: %d, %v; want %d", n, err, 2*len(entries))
	}
}
