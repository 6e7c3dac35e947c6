package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// AuditIndexCounter is implemented by stores that keep the audit's
// secondary index themselves (embedded, etcd): how many index keys a
// stream holds. The contract checks that a purge leaves none behind.
type AuditIndexCounter interface {
	CountAuditIndex(ctx context.Context, stream tokens.AuditStream) (int, error)
}

// indexedEntries returns n refusals over 7 resources, 3 holders and two
// decisions, one interval (a second) each, and a lease entry of each
// resource.
func indexedEntries(n int) (refusals, leases []tokens.AuditEntry) {
	for i := range n {
		e := refusal(i, fmt.Sprintf("r%d", i%7), fmt.Sprintf("node-%d", i%3), 1)
		if i%2 == 1 {
			e.Kind = "missing"
		}
		refusals = append(refusals, e)
	}
	for i := range 7 {
		at := auditT0.Add(time.Duration(i) * time.Second)
		leases = append(leases, tokens.AuditEntry{Stream: tokens.AuditLeases, ID: tokens.AuditID(at, "lease", fmt.Sprint(i)),
			Resource: fmt.Sprintf("r%d", i), Kind: tokens.LeaseAcquired, First: at, Last: at, Count: 1})
	}
	return refusals, leases
}

// expectAudit is what a store must list for q over all: the entries q
// selects, highest ID first, up to q.Limit.
func expectAudit(all []tokens.AuditEntry, q tokens.AuditQuery) []tokens.AuditEntry {
	var out []tokens.AuditEntry
	for _, e := range all {
		if e.Stream == q.Stream && q.Matches(e) && (q.Before == "" || e.ID < q.Before) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b tokens.AuditEntry) int { return strings.Compare(b.ID, a.ID) })
	return out[:min(len(out), q.Limit)]
}

// testAuditIndexedFilters: every combination of resource, kind and time
// filters, paged, lists exactly what a full scan would.
func testAuditIndexedFilters(t *testing.T, f Factory) {
	s := f(t)
	refusals, leases := indexedEntries(300)
	all := append(slices.Clone(refusals), leases...)
	mustPutAudit(t, s, all...)
	at := func(sec int) time.Time { return auditT0.Add(time.Duration(sec) * time.Second) }
	for _, q := range []tokens.AuditQuery{
		{Resource: "r3"}, {Kind: "missing"}, {Resource: "r3", Kind: "stale"}, {Resource: "r3", Holder: "node-1"},
		{Since: at(250)}, {Until: at(50)}, {Until: at(50).Add(500 * time.Millisecond)}, {Since: at(100), Until: at(120)},
		{Resource: "r2", Since: at(100), Until: at(200)}, {Kind: "stale", Until: at(10)}, {Resource: "nothing"},
		{Resource: "r1", Since: at(400)}, {Stream: tokens.AuditLeases, Resource: "r4"},
		{Stream: tokens.AuditLeases, Kind: tokens.LeaseAcquired, Since: at(3)},
	} {
		if q.Stream == "" {
			q.Stream = tokens.AuditRefusals
		}
		for _, limit := range []int{1000, 7} {
			q.Limit, q.Before = limit, ""
			var got, want []tokens.AuditEntry
			for page := 0; ; page++ {
				if page > 400 {
					t.Fatalf("%+v: paging does not end", q)
				}
				g, w := mustListAudit(t, s, q), expectAudit(all, q)
				sameEntries(t, g, w)
				got, want = append(got, g...), append(want, w...)
				if len(g) < limit {
					break
				}
				q.Before = g[len(g)-1].ID
			}
			if limit == 7 && len(got) != len(expectAudit(all, tokens.AuditQuery{Stream: q.Stream, Resource: q.Resource,
				Kind: q.Kind, Holder: q.Holder, Since: q.Since, Until: q.Until, Limit: 1000})) {
				t.Fatalf("%+v: %d entries over all pages", q, len(got))
			}
		}
	}
}

// testAuditPurgeIndex: a purge deletes its entries' index keys with them,
// so a filtered list shows only what is left and (where the store keeps
// its own index) no index key outlives its entry.
func testAuditPurgeIndex(t *testing.T, f Factory) {
	s := f(t)
	refusals, leases := indexedEntries(50)
	mustPutAudit(t, s, append(slices.Clone(refusals), leases...)...)
	for _, p := range []struct {
		before time.Time
		keep   int
	}{{auditT0.Add(20 * time.Second), 100}, {auditT0, 10}} {
		if _, err := s.PurgeAudit(ctx(t), tokens.AuditRefusals, p.before, p.keep); err != nil {
			t.Fatalf("PurgeAudit: %v", err)
		}
	}
	left := refusals[40:]
	for _, r := range []string{"r0", "r5"} {
		q := tokens.AuditQuery{Stream: tokens.AuditRefusals, Resource: r, Limit: 1000}
		sameEntries(t, mustListAudit(t, s, q), expectAudit(left, q))
	}
	c, ok := s.(AuditIndexCounter)
	if !ok {
		return
	}
	for stream, want := range map[tokens.AuditStream]int{tokens.AuditRefusals: 2 * len(left), tokens.AuditLeases: 2 * len(leases)} {
		if n, err := c.CountAuditIndex(ctx(t), stream); err != nil || n != want {
			t.Fatalf("CountAuditIndex(%s) = %d, %v; want %d (two per entry left)", stream, n, err, want)
		}
	}
}
