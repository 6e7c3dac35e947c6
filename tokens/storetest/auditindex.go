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

// junkEntries returns n junk entries, one interval (a second) each, of
// two decisions: no resource, as the gateway records them.
func junkEntries(n int) []tokens.AuditEntry {
	var out []tokens.AuditEntry
	for i := range n {
		e := refusal(i, "", "", 100)
		e.Stream, e.Kind, e.Status = tokens.AuditJunk, "missing", 428
		if i%2 == 1 {
			e.Kind, e.Status = "invalid", 400
		}
		out = append(out, e)
	}
	return out
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
	// An entry whose last event lies long after its interval's start: a
	// query since then must still find it.
	refusals[5].Last = refusals[5].First.Add(40 * time.Minute)
	all := append(slices.Clone(refusals), leases...)
	mustPutAudit(t, s, all...)
	at := func(sec int) time.Time { return auditT0.Add(time.Duration(sec) * time.Second) }
	for _, q := range []tokens.AuditQuery{
		{Resource: "r3"}, {Kind: "missing"}, {Resource: "r3", Kind: "stale"}, {Resource: "r3", Holder: "node-1"},
		{Since: at(250)}, {Until: at(50)}, {Until: at(50).Add(500 * time.Millisecond)}, {Since: at(100), Until: at(120)},
		{Resource: "r2", Since: at(100), Until: at(200)}, {Kind: "stale", Until: at(10)}, {Resource: "nothing"},
		{Resource: "r1", Since: at(400)}, {Stream: tokens.AuditLeases, Resource: "r4"},
		{Since: at(5).Add(30 * time.Minute)}, {Kind: "missing", Since: at(5).Add(30 * time.Minute)},
		{Stream: tokens.AuditLeases, Kind: tokens.LeaseAcquired, Since: at(3)},
	} {
		if q.Stream == "" {
			q.Stream = tokens.AuditRefusals
		}
		for _, limit := range []int{1000, 7} {
			q.Limit, q.Before = limit, ""
			var got []tokens.AuditEntry
			for page := 0; ; page++ {
				if page > 400 {
					t.Fatalf("%+v: paging does not end", q)
				}
				g, w := mustListAudit(t, s, q), expectAudit(all, q)
				sameEntries(t, g, w)
				got = append(got, g...)
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
	junk := junkEntries(30)
	mustPutAudit(t, s, append(append(slices.Clone(refusals), leases...), junk...)...)
	// In small steps, as the server purges: each deletes its entries'
	// index keys.
	purge := func(stream tokens.AuditStream, before time.Time, keep int) {
		t.Helper()
		const limit = 7
		for calls := 0; ; calls++ {
			n, err := s.PurgeAudit(ctx(t), stream, before, keep, limit)
			if err != nil {
				t.Fatalf("PurgeAudit(%s): %v", stream, err)
			}
			if n > limit {
				t.Fatalf("PurgeAudit(%s) deleted %d, more than its limit %d", stream, n, limit)
			}
			if n < limit {
				break
			}
			if calls > len(refusals) {
				t.Fatal("the purge does not end")
			}
		}
	}
	purge(tokens.AuditRefusals, auditT0.Add(20*time.Second), 100)
	purge(tokens.AuditRefusals, auditT0, 10)
	purge(tokens.AuditJunk, auditT0.Add(12*time.Second), 100)
	left, junkLeft := refusals[40:], junk[12:]
	for _, r := range []string{"r0", "r5"} {
		q := tokens.AuditQuery{Stream: tokens.AuditRefusals, Resource: r, Limit: 1000}
		sameEntries(t, mustListAudit(t, s, q), expectAudit(left, q))
	}
	for _, kind := range []string{"missing", "invalid"} {
		q := tokens.AuditQuery{Stream: tokens.AuditJunk, Kind: kind, Limit: 1000}
		sameEntries(t, mustListAudit(t, s, q), expectAudit(junkLeft, q))
	}
	c, ok := s.(AuditIndexCounter)
	if !ok {
		return
	}
	for stream, want := range map[tokens.AuditStream]int{tokens.AuditRefusals: 2 * len(left), tokens.AuditLeases: 2 * len(leases),
		tokens.AuditJunk: 2 * len(junkLeft)} {
		if n, err := c.CountAuditIndex(ctx(t), stream); err != nil || n != want {
			t.Fatalf("CountAuditIndex(%s) = %d, %v; want %d (two per entry left)", stream, n, err, want)
		}
	}
}

// testAuditResources: the distinct names of every stream, by prefix and
// paged, in byte order, a name listed once however many entries it has;
// no empty name (junk); a purged name is gone.
func testAuditResources(t *testing.T, f Factory) {
	s := f(t)
	names := []string{"a", "ab", "abc", "b", "email:tenant-42", "email:tenant-7", "é", "z z"}
	var all []tokens.AuditEntry
	for i, n := range names {
		for j := range 3 {
			all = append(all, refusal(10*i+j, n, "node-a", 1))
		}
	}
	for i, n := range []string{"ab", "lease-only", "email:x"} {
		at := auditT0.Add(time.Duration(i) * time.Second)
		all = append(all, tokens.AuditEntry{Stream: tokens.AuditLeases, ID: tokens.AuditID(at, n), Resource: n,
			Kind: tokens.LeaseAcquired, First: at, Last: at, Count: 1})
	}
	// Junk entries and a refusal that named no resource add no name, nor
	// take a name's place in a page.
	all = append(all, junkEntries(5)...)
	all = append(all, refusal(99, "", "node-a", 1))
	mustPutAudit(t, s, all...)
	want := []string{"a", "ab", "abc", "b", "email:tenant-42", "email:tenant-7", "email:x", "lease-only", "z z", "é"}
	list := func(q tokens.AuditResourceQuery) []string {
		t.Helper()
		got, err := s.ListAuditResources(ctx(t), q)
		if err != nil {
			t.Fatalf("ListAuditResources(%+v): %v", q, err)
		}
		return got
	}
	for _, c := range []struct {
		q    tokens.AuditResourceQuery
		want []string
	}{
		{tokens.AuditResourceQuery{Limit: 100}, want},
		{tokens.AuditResourceQuery{Prefix: "email:", Limit: 100}, want[4:7]},
		{tokens.AuditResourceQuery{Prefix: "a", After: "ab", Limit: 100}, want[2:3]},
		{tokens.AuditResourceQuery{Prefix: "nothing", Limit: 100}, nil},
		{tokens.AuditResourceQuery{Limit: 3}, want[:3]},
	} {
		if got := list(c.q); !slices.Equal(got, c.want) {
			t.Fatalf("ListAuditResources(%+v) = %q, want %q", c.q, got, c.want)
		}
	}
	var paged []string
	for q := (tokens.AuditResourceQuery{Limit: 3}); ; {
		page := list(q)
		paged = append(paged, page...)
		if len(page) < q.Limit || len(paged) > len(want) {
			break
		}
		q.After = page[len(page)-1]
	}
	if !slices.Equal(paged, want) {
		t.Fatalf("paged by 3: %q, want %q", paged, want)
	}
	if _, err := s.PurgeAudit(ctx(t), tokens.AuditRefusals, auditT0.Add(10*time.Second), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if got := list(tokens.AuditResourceQuery{Prefix: "a", Limit: 100}); !slices.Equal(got, []string{"ab", "abc"}) {
		t.Fatalf("after purging a's refusals: %q", got)
	}
}
