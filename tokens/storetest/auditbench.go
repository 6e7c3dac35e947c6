package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// AuditBenchEntries returns n refusals over 1000 resources, one interval
// (a second) per 100 entries: the log BenchAuditQueries reads.
func AuditBenchEntries(n int) []tokens.AuditEntry {
	out := make([]tokens.AuditEntry, n)
	for i := range out {
		start := auditT0.Add(time.Duration(i/100) * time.Second)
		res := fmt.Sprintf("res-%d", i%1000)
		out[i] = tokens.AuditEntry{Stream: tokens.AuditRefusals, ID: tokens.AuditID(start, res, fmt.Sprint(i)),
			Resource: res, Kind: "missing", Replica: "gw-1", Route: "/api/", Status: 428,
			First: start, Last: start.Add(time.Second / 2), Count: 1}
	}
	return out
}

// FillAudit puts entries into s in batches of 5000.
func FillAudit(b *testing.B, s tokens.AuditStore, entries []tokens.AuditEntry) {
	b.Helper()
	for i := 0; i < len(entries); i += 5000 {
		if err := s.PutAudit(context.Background(), entries[i:min(i+5000, len(entries))]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchAuditQueries times filtered queries over entries (from
// AuditBenchEntries, already in s): by resource, by resource and a time
// window, by a resource with no entries, by kind, and by holder, which no
// index serves (every filtered query's cost before the index).
func BenchAuditQueries(b *testing.B, s tokens.AuditStore, entries []tokens.AuditEntry) {
	mid := entries[len(entries)/2].First
	perResource := len(entries) / 1000
	for _, c := range []struct {
		name string
		q    tokens.AuditQuery
		want int
	}{
		{"resource", tokens.AuditQuery{Resource: "res-421"}, perResource},
		{"resource+window", tokens.AuditQuery{Resource: "res-421", Since: mid, Until: mid.Add(100 * time.Second)}, 10},
		{"unknown-resource", tokens.AuditQuery{Resource: "nothing"}, 0},
		{"kind", tokens.AuditQuery{Kind: "missing", Limit: 100}, 100},
		{"window", tokens.AuditQuery{Since: mid, Until: mid.Add(2 * time.Second), Limit: 1000}, 300},
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
