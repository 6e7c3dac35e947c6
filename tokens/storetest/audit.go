package storetest

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// RunAudit runs the contract of the durable audit: entries replaced whole,
// kept apart by stream, shared between clients and across restarts,
// filtered, paged and purged.
func RunAudit(t *testing.T, fresh func(t *testing.T) Factory) {
	runCases(t, fresh, []contractCase{
		{"PutAndList", testAuditPutList},
		{"PutReplaces", testAuditReplace},
		{"Filters", testAuditFilters},
		{"Paging", testAuditPaging},
		{"SharedAndRestart", testAuditShared},
		{"LargeBatch", testAuditLargeBatch},
		{"Purge", testAuditPurge},
		{"PurgeInBatches", testAuditPurgeBatches},
		{"JunkStream", testAuditJunkStream},
		{"IndexedFilters", testAuditIndexedFilters},
		{"PurgeIndex", testAuditPurgeIndex},
		{"Resources", testAuditResources},
	})
}

// auditT0 is a fixed interval start for the cases' entries.
var auditT0 = time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)

// refusal returns a refusal entry of interval i (one second each) with
// count n.
func refusal(i int, resource, holder string, n int64) tokens.AuditEntry {
	start := auditT0.Add(time.Duration(i) * time.Second)
	return tokens.AuditEntry{Stream: tokens.AuditRefusals, ID: tokens.AuditID(start, resource, holder),
		Resource: resource, Kind: "stale", Holder: holder, Replica: "gw-1", Epoch: 1, CurrentEpoch: 2,
		Route: "api", Status: 412, First: start.Add(time.Millisecond), Last: start.Add(900 * time.Millisecond),
		Count: n, TraceIDs: []string{fmt.Sprintf("%032x", i+1)}}
}

func mustPutAudit(t *testing.T, s tokens.Store, entries ...tokens.AuditEntry) {
	t.Helper()
	if err := s.PutAudit(ctx(t), entries); err != nil {
		t.Fatalf("PutAudit(%d entries): %v", len(entries), err)
	}
}

func mustListAudit(t *testing.T, s tokens.Store, q tokens.AuditQuery) []tokens.AuditEntry {
	t.Helper()
	if q.Limit == 0 {
		q.Limit = 1000
	}
	got, err := s.ListAudit(ctx(t), q)
	if err != nil {
		t.Fatalf("ListAudit(%+v): %v", q, err)
	}
	return got
}

// sameEntries fails the test unless got and want hold the same entries in
// the same order.
func sameEntries(t *testing.T, got, want []tokens.AuditEntry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d entries %v, want %d %v", len(got), ids(got), len(want), ids(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if !g.First.Equal(w.First) || !g.Last.Equal(w.Last) || !g.ExpiresAt.Equal(w.ExpiresAt) {
			t.Fatalf("entry %d times: got %v %v %v, want %v %v %v", i, g.First, g.Last, g.ExpiresAt, w.First, w.Last, w.ExpiresAt)
		}
		g.First, g.Last, g.ExpiresAt = w.First, w.Last, w.ExpiresAt
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("entry %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func ids(es []tokens.AuditEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func testAuditPutList(t *testing.T, f Factory) {
	s := f(t)
	a, b := refusal(0, "r", "node-a", 3), refusal(1, "r", "node-b", 1)
	lease := tokens.AuditEntry{Stream: tokens.AuditLeases, ID: tokens.AuditID(auditT0, "r", "acquired", "2"),
		Resource: "r", Kind: tokens.LeaseAcquired, Holder: "node-b", Replica: "gw-2", Epoch: 2,
		ExpiresAt: auditT0.Add(10 * time.Second), TTL: 10 * time.Second, LockDelay: time.Second,
		PreviousHolder: "node-a", PreviousEpoch: 1, First: auditT0, Last: auditT0, Count: 1}
	mustPutAudit(t, s, a, lease, b)
	sameEntries(t, mustListAudit(t, s, tokens.AuditQuery{Stream: tokens.AuditRefusals}), []tokens.AuditEntry{b, a})
	sameEntries(t, mustListAudit(t, s, tokens.AuditQuery{Stream: tokens.AuditLeases}), []tokens.AuditEntry{lease})
}

func testAuditReplace(t *testing.T, f Factory) {
	s := f(t)
	e := refusal(0, "r", "node-a", 1)
	mustPutAudit(t, s, e)
	e.Count, e.Last = 5, e.Last.Add(50*time.Millisecond)
	e.TraceIDs = append(e.TraceIDs, fmt.Sprintf("%032x", 99))
	mustPutAudit(t, s, e)
	mustPutAudit(t, s, e) // a retried put changes nothing
	sameEntries(t, mustListAudit(t, s, tokens.AuditQuery{Stream: tokens.AuditRefusals}), []tokens.AuditEntry{e})
}

func testAuditFilters(t *testing.T, f Factory) {
	s := f(t)
	e0, e1, e2 := refusal(0, "r", "node-a", 1), refusal(1, "q", "node-a", 1), refusal(2, "r", "node-b", 1)
	e2.Replica, e1.Kind = "gw-2", "bad-token"
	mustPutAudit(t, s, e0, e1, e2)
	for _, c := range []struct {
		name string
		q    tokens.AuditQuery
		want []tokens.AuditEntry
	}{
		{"resource", tokens.AuditQuery{Resource: "r"}, []tokens.AuditEntry{e2, e0}},
		{"kind", tokens.AuditQuery{Kind: "bad-token"}, []tokens.AuditEntry{e1}},
		{"holder", tokens.AuditQuery{Holder: "node-a"}, []tokens.AuditEntry{e1, e0}},
		{"replica", tokens.AuditQuery{Replica: "gw-2"}, []tokens.AuditEntry{e2}},
		{"since", tokens.AuditQuery{Since: e1.Last}, []tokens.AuditEntry{e2, e1}},
		{"until", tokens.AuditQuery{Until: e1.First}, []tokens.AuditEntry{e1, e0}},
		{"window", tokens.AuditQuery{Since: e1.First, Until: e1.Last}, []tokens.AuditEntry{e1}},
		{"resource and holder", tokens.AuditQuery{Resource: "r", Holder: "node-b"}, []tokens.AuditEntry{e2}},
		{"none", tokens.AuditQuery{Resource: "nothing"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.q.Stream = tokens.AuditRefusals
			sameEntries(t, mustListAudit(t, s, c.q), c.want)
		})
	}
}

func testAuditPaging(t *testing.T, f Factory) {
	s := f(t)
	var all []tokens.AuditEntry
	for i := range 25 {
		holder := "node-a"
		if i%3 == 0 {
			holder = "node-b"
		}
		all = append(all, refusal(i, "r", holder, int64(i+1)))
	}
	mustPutAudit(t, s, all...)
	for _, holder := range []string{"", "node-b"} {
		var want []tokens.AuditEntry
		for i := len(all) - 1; i >= 0; i-- {
			if holder == "" || all[i].Holder == holder {
				want = append(want, all[i])
			}
		}
		var got []tokens.AuditEntry
		q := tokens.AuditQuery{Stream: tokens.AuditRefusals, Holder: holder, Limit: 4}
		for pages := 0; ; pages++ {
			if pages > len(all) {
				t.Fatalf("holder %q: paging does not end", holder)
			}
			page := mustListAudit(t, s, q)
			got = append(got, page...)
			if len(page) < q.Limit {
				break
			}
			q.Before = page[len(page)-1].ID
		}
		sameEntries(t, got, want)
	}
}

func testAuditShared(t *testing.T, f Factory) {
	a := f(t)
	e := refusal(0, "r", "node-a", 7)
	mustPutAudit(t, a, e)
	if !a.Exclusive() {
		b := f(t)
		sameEntries(t, mustListAudit(t, b, tokens.AuditQuery{Stream: tokens.AuditRefusals}), []tokens.AuditEntry{e})
		b.Close()
	}
	a.Close()
	sameEntries(t, mustListAudit(t, f(t), tokens.AuditQuery{Stream: tokens.AuditRefusals}), []tokens.AuditEntry{e})
}

func testAuditLargeBatch(t *testing.T, f Factory) {
	s := f(t)
	var all []tokens.AuditEntry
	for i := range 250 {
		all = append(all, refusal(i, fmt.Sprintf("r%d", i%7), "node-a", 1))
	}
	mustPutAudit(t, s, all...)
	if got := mustListAudit(t, s, tokens.AuditQuery{Stream: tokens.AuditRefusals}); len(got) != len(all) {
		t.Fatalf("listed %d entries of %d put", len(got), len(all))
	}
}

func testAuditPurge(t *testing.T, f Factory) {
	s := f(t)
	var all []tokens.AuditEntry
	for i := range 10 {
		all = append(all, refusal(i, "r", "node-a", 1))
	}
	lease := tokens.AuditEntry{Stream: tokens.AuditLeases, ID: tokens.AuditID(auditT0, "r"), Resource: "r",
		Kind: tokens.LeaseAcquired, First: auditT0, Last: auditT0, Count: 1}
	mustPutAudit(t, s, append(all, lease)...)
	purge := func(before time.Time, keep, want int) {
		t.Helper()
		n, err := s.PurgeAudit(ctx(t), tokens.AuditRefusals, before, keep, 1000)
		if err != nil || n != want {
			t.Fatalf("PurgeAudit(before %v, keep %d) = %d, %v; want %d deleted", before, keep, n, err, want)
		}
	}
	purge(auditT0.Add(3*time.Second), 100, 3) // intervals 0, 1, 2 are older
	purge(auditT0, 5, 2)                      // 7 left, keep the newest 5
	purge(auditT0, 5, 0)
	want := []tokens.AuditEntry{all[9], all[8], all[7], all[6], all[5]}
	sameEntries(t, mustListAudit(t, s, tokens.AuditQuery{Stream: tokens.AuditRefusals}), want)
	// Another stream is left alone.
	sameEntries(t, mustListAudit(t, s, tokens.AuditQuery{Stream: tokens.AuditLeases}), []tokens.AuditEntry{lease})
}

// testAuditPurgeBatches: a purge of many entries is done in bounded
// steps: each call deletes at most its limit, the oldest first, and calls
// repeated until one deletes less leave exactly the newest keep.
func testAuditPurgeBatches(t *testing.T, f Factory) {
	s := f(t)
	const total, keep, limit = 3 * tokens.AuditBatch, 100, 64
	var all []tokens.AuditEntry
	for i := range total {
		all = append(all, refusal(i, "r", "node-a", 1))
	}
	mustPutAudit(t, s, all...)
	deleted, calls := 0, 0
	for {
		n, err := s.PurgeAudit(ctx(t), tokens.AuditRefusals, auditT0, keep, limit)
		if err != nil {
			t.Fatalf("PurgeAudit after %d deleted: %v", deleted, err)
		}
		if n > limit {
			t.Fatalf("one PurgeAudit deleted %d entries, more than its limit %d", n, limit)
		}
		deleted, calls = deleted+n, calls+1
		if n < limit {
			break
		}
		if calls > total {
			t.Fatal("the purge does not end")
		}
	}
	if want := (total - keep + limit - 1) / limit; deleted != total-keep || calls < want {
		t.Fatalf("deleted %d in %d calls; want %d in at least %d", deleted, calls, total-keep, want)
	}
	got := mustListAudit(t, s, tokens.AuditQuery{Stream: tokens.AuditRefusals})
	if len(got) != keep || got[0].ID != all[total-1].ID || got[keep-1].ID != all[total-keep].ID {
		t.Fatalf("%d entries left, want the newest %d", len(got), keep)
	}
	// Old intervals go in bounded steps too.
	if n, err := s.PurgeAudit(ctx(t), tokens.AuditRefusals, auditT0.Add(time.Hour), 1000, 30); err != nil || n != 30 {
		t.Fatalf("PurgeAudit of old entries with limit 30 = %d, %v", n, err)
	}
}

// testAuditJunkStream: the junk log is a stream of its own, listed and
// purged apart from the refusals.
func testAuditJunkStream(t *testing.T, f Factory) {
	s := f(t)
	junk := refusal(0, "", "", 20000)
	junk.Stream, junk.Kind, junk.Status = tokens.AuditJunk, "missing", 428
	real := refusal(1, "r", "node-a", 1)
	mustPutAudit(t, s, junk, real)
	sameEntries(t, mustListAudit(t, s, tokens.AuditQuery{Stream: tokens.AuditJunk}), []tokens.AuditEntry{junk})
	sameEntries(t, mustListAudit(t, s, tokens.AuditQuery{Stream: tokens.AuditRefusals}), []tokens.AuditEntry{real})
	if n, err := s.PurgeAudit(ctx(t), tokens.AuditJunk, auditT0.Add(time.Hour), 0, 10); err != nil || n != 1 {
		t.Fatalf("PurgeAudit(junk) = %d, %v; want 1", n, err)
	}
	sameEntries(t, mustListAudit(t, s, tokens.AuditQuery{Stream: tokens.AuditRefusals}), []tokens.AuditEntry{real})
}
