package bench

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/internal/testutil/testpg"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/boltstore"
	"github.com/fencegw/fencegw/tokens/etcdstore"
	"github.com/fencegw/fencegw/tokens/pgstore"
)

var (
	auditIndexEntries = flag.Int("audit-index-entries", 110_000,
		"audit entries BenchmarkAuditIndex loads into each store (0: skip)")
	auditIndexRounds = flag.Int("audit-index-rounds", 5,
		"interleaved rounds of BenchmarkAuditIndex's queries; it reports medians")
)

// auditResources is how many resources the benchmark's entries name, and
// auditPerSecond how many entries start in each second.
const (
	auditResources = 1000
	auditPerSecond = 100
	auditPage      = 1000 // the page of every query (the API's largest)
)

// auditT0 is the start of the benchmark's log.
var auditT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// auditRefusalKinds are the refusals' decisions by weight (per hundred):
// forged is the rare event.
var auditRefusalKinds = []struct {
	kind   string
	weight int
}{{"stale", 60}, {"missing", 25}, {"forbidden", 10}, {"unavailable", 4}, {"forged", 1}}

// auditIndexLog returns n refusals over auditResources resources (in
// turn), of the decisions of auditRefusalKinds and 20 holders and 3
// replicas (drawn from a fixed seed), auditPerSecond intervals of a
// second starting each second.
func auditIndexLog(n int) []tokens.AuditEntry {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]tokens.AuditEntry, n)
	for i := range out {
		start := auditT0.Add(time.Duration(i/auditPerSecond) * time.Second)
		res := fmt.Sprintf("res-%d", i%auditResources)
		kind, w := "", r.IntN(100)
		for _, k := range auditRefusalKinds {
			if w -= k.weight; w < 0 {
				kind = k.kind
				break
			}
		}
		out[i] = tokens.AuditEntry{Stream: tokens.AuditRefusals, ID: tokens.AuditID(start, res, fmt.Sprint(i)),
			Resource: res, Kind: kind, Holder: fmt.Sprintf("worker-%d", r.IntN(20)),
			Replica: fmt.Sprintf("gw-%d", r.IntN(3)), Route: "/api/", Status: 409, Epoch: 3, CurrentEpoch: 4,
			First: start, Last: start.Add(time.Second / 2), Count: 1 + int64(r.IntN(50))}
	}
	return out
}

// auditQueryCase is one query the benchmark times.
type auditQueryCase struct {
	name string
	q    tokens.AuditQuery
	// scan: a baseline that reads the whole log (its ratios are to
	// itself); filtered: a query whose work must be what it matches.
	scan, filtered bool
	want           int // entries it returns (a full scan: over all its pages)
	times          []time.Duration
	same           []time.Duration // the unfiltered query of want entries, in the same rounds
	keys           int64           // keys read from the store, where counted (-1: not counted)
	skipped        bool            // not run: the whole log took over slowScan
}

// slowScan: a baseline scan slower than this runs in the first round only,
// and the filter no index serves (a scan as slow) not at all, to keep
// the run short on a store whose unfiltered scan is slow.
const slowScan = 5 * time.Second

// auditStoreRun is one store the benchmark loads and queries.
type auditStoreRun struct {
	name  string
	store tokens.AuditStore
	// keysRead, when not nil, is how many keys the store has read so far.
	keysRead func() int64
	// prepare runs after the load, before the queries (statistics, a
	// backfill).
	prepare func(ctx context.Context) error
}

// BenchmarkAuditIndex measures the audit's filtered queries on every store
// against the unfiltered scan of the same log, side by side, as
// docs/audit-benchmarks.md reports: it loads -audit-index-entries
// refusals into the embedded store, PostgreSQL and a one-member embedded
// etcd, then times queries by resource, by event (decision), by a time
// window and by resource and window, each one page of at most 1000
// entries, against reading the whole log unfiltered (page after page)
// and against a filter no index serves (a baseline slower than slowScan
// runs once). On etcd it also counts the keys each query read (those etcd
// returned to the store, not those the server visited), and fails if a
// filtered query read more than it returned (two keys each: index key and
// entry) plus two read batches: a count of work, not a time.
//
//	FENCEGW_BENCH=AuditIndex bench/run    # or: go test -run '^$' -bench AuditIndex -benchtime 1x ./bench
func BenchmarkAuditIndex(b *testing.B) {
	if b.N > 1 {
		b.Skip("one iteration is the whole run: run with -benchtime 1x")
	}
	if *auditIndexEntries <= 0 {
		b.Skip("-audit-index-entries 0")
	}
	entries := auditIndexLog(*auditIndexEntries)
	ctx := b.Context()

	bolt, err := boltstore.Open(filepath.Join(b.TempDir(), "audit.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bolt.Close() })

	dsn := testpg.Shared(b).NewDatabase(b)
	pg, err := pgstore.Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pg.Close() })

	cli := testetcd.Start(b, 1).Client(b)
	counter := &countingKV{KV: cli.KV}
	cli.KV = counter
	etcd := etcdstore.New(cli, "/audit-bench/")
	b.Cleanup(func() { etcd.Close() })

	stores := []auditStoreRun{
		{name: "embedded (bbolt)", store: bolt},
		{name: "PostgreSQL", store: pg, prepare: func(ctx context.Context) error {
			// As autovacuum would after such a load.
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				return fmt.Errorf("analyze: %w", err)
			}
			defer conn.Close(ctx)
			if _, err := conn.Exec(ctx, "ANALYZE"); err != nil {
				return fmt.Errorf("analyze: %w", err)
			}
			return nil
		}},
		{name: "etcd (embedded, one member)", store: etcd, keysRead: counter.keys.Load,
			prepare: etcd.IndexAudit}, // marks the index complete, as on a store that began with it
	}
	fmt.Printf("\naudit index: %d refusals over %d resources, %d decisions, %s (%d intervals a second); pages of %d\n",
		len(entries), auditResources, len(auditRefusalKinds), time.Duration(len(entries)/auditPerSecond)*time.Second,
		auditPerSecond, auditPage)
	for _, st := range stores {
		start := time.Now()
		if err := fillAudit(ctx, st.store, entries); err != nil {
			b.Fatalf("%s: %v", st.name, err)
		}
		if st.prepare != nil {
			if err := st.prepare(ctx); err != nil {
				b.Fatalf("%s: %v", st.name, err)
			}
		}
		load := time.Since(start)
		cases := auditQueryCases(entries)
		if err := runAuditQueries(ctx, st, cases, *auditIndexRounds); err != nil {
			b.Fatalf("%s: %v", st.name, err)
		}
		printAuditQueries(st, cases, len(entries), load)
		if st.keysRead != nil {
			if err := checkAuditWork(cases); err != nil {
				b.Errorf("%s: %v", st.name, err)
			}
		}
	}
}

// auditQueryCases returns the benchmark's queries over entries, with what
// each returns.
func auditQueryCases(entries []tokens.AuditEntry) []*auditQueryCase {
	mid := entries[len(entries)/2].First
	cases := []*auditQueryCase{
		{name: "unfiltered, whole log (baseline)", scan: true},
		{name: "holder: no index serves it", q: tokens.AuditQuery{Holder: "nobody"}, scan: true},
		{name: "resource", q: tokens.AuditQuery{Resource: "res-421"}, filtered: true},
		{name: "event (decision forged, 1%)", q: tokens.AuditQuery{Kind: "forged"}, filtered: true},
		{name: "event (decision stale, 60%)", q: tokens.AuditQuery{Kind: "stale"}, filtered: true},
		{name: "time window (2 s)", q: tokens.AuditQuery{Since: mid, Until: mid.Add(2 * time.Second)}, filtered: true},
		{name: "resource + window (100 s)", q: tokens.AuditQuery{Resource: "res-421", Since: mid,
			Until: mid.Add(100 * time.Second)}, filtered: true},
		{name: "unknown resource", q: tokens.AuditQuery{Resource: "nothing"}, filtered: true},
	}
	for _, c := range cases {
		c.q.Stream, c.q.Limit, c.keys = tokens.AuditRefusals, auditPage, -1
		for _, e := range entries {
			if c.q.Matches(e) {
				c.want++
			}
		}
		if !c.scan {
			c.want = min(c.want, auditPage)
		} else if c.q.Holder != "" {
			c.want = 0
		}
	}
	return cases
}

// runAuditQueries times every case once a round, each beside the
// unfiltered query of as many entries, and counts the keys of its first
// run where the store counts them. The whole log is read first (cases[0]).
func runAuditQueries(ctx context.Context, st auditStoreRun, cases []*auditQueryCase, rounds int) error {
	for round := range max(rounds, 1) {
		for _, c := range cases {
			if c.scan && c != cases[0] && len(cases[0].times) > 0 && cases[0].times[0] > 2*slowScan {
				c.skipped = true
				continue
			}
			if c.scan && round > 0 && c.times[0] > slowScan {
				continue
			}
			before := int64(0)
			if st.keysRead != nil {
				before = st.keysRead()
			}
			start := time.Now()
			n, err := listAuditPages(ctx, st.store, c.q)
			took := time.Since(start)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			if n != c.want {
				return fmt.Errorf("%s: %d entries, want %d", c.name, n, c.want)
			}
			if round == 0 && st.keysRead != nil {
				c.keys = st.keysRead() - before
			}
			c.times = append(c.times, took)
			if c.scan || c.want == 0 {
				continue
			}
			start = time.Now()
			got, err := st.store.ListAudit(ctx, tokens.AuditQuery{Stream: c.q.Stream, Limit: c.want})
			took = time.Since(start)
			if err != nil || len(got) != c.want {
				return fmt.Errorf("unfiltered page of %d: %d entries: %w", c.want, len(got), err)
			}
			c.same = append(c.same, took)
		}
	}
	return nil
}

// listAuditPages lists every page q selects, as a client of the API would
// follow its cursor, and returns how many entries they held.
func listAuditPages(ctx context.Context, s tokens.AuditStore, q tokens.AuditQuery) (int, error) {
	n := 0
	for {
		page, err := s.ListAudit(ctx, q)
		if err != nil {
			return n, err
		}
		n += len(page)
		if len(page) < q.Limit || q.Resource != "" || q.Kind != "" || !q.Since.IsZero() {
			// A filtered case is one page: what an API call answers.
			return n, nil
		}
		q.Before = page[len(page)-1].ID
	}
}

// checkAuditWork fails a filtered case that read more keys than two per
// entry returned (index key and entry) plus two read batches: an index
// reads only what matches.
func checkAuditWork(cases []*auditQueryCase) error {
	for _, c := range cases {
		if !c.filtered || c.keys < 0 {
			continue
		}
		if bound := int64(2*c.want + 2*256); c.keys > bound {
			return fmt.Errorf("%s read %d keys for %d entries; want at most %d", c.name, c.keys, c.want, bound)
		}
	}
	return nil
}

func printAuditQueries(st auditStoreRun, cases []*auditQueryCase, total int, load time.Duration) {
	fmt.Printf("\n%s: loaded %d entries in %s\n", st.name, total, load.Round(100*time.Millisecond))
	scan := medianDuration(cases[0].times)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "query\tentries\tmedian\t× whole log\tunfiltered, same size\t× same size\tkeys read\t\n")
	for _, c := range cases {
		if c.skipped {
			// A scan of the whole log too, over 2*slowScan.
			fmt.Fprintf(w, "%s\t-\tnot run\t-\t-\t-\t-\t\n", c.name)
			continue
		}
		t := medianDuration(c.times)
		same, sameRatio := "-", "-"
		if len(c.same) > 0 {
			s := medianDuration(c.same)
			same, sameRatio = roundDuration(s), ratio(float64(t), float64(s))
		}
		keys := "-"
		if c.keys >= 0 {
			keys = fmt.Sprint(c.keys)
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", c.name, c.want, roundDuration(t), fmtRatio(float64(t), float64(scan)),
			same, sameRatio, keys)
	}
	w.Flush()
}

// fmtRatio is ratio with enough digits for the small ratios of indexed
// queries to a whole scan.
func fmtRatio(v, base float64) string {
	if base == 0 {
		return "-"
	}
	if r := v / base; r < 0.01 {
		return fmt.Sprintf("%.5f", r)
	}
	return ratio(v, base)
}

func roundDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

func medianDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// fillAudit puts entries into s in batches of 5000, as a replica's audit
// writer would over time.
func fillAudit(ctx context.Context, s tokens.AuditStore, entries []tokens.AuditEntry) error {
	for i := 0; i < len(entries); i += 5000 {
		if err := s.PutAudit(ctx, entries[i:min(i+5000, len(entries))]); err != nil {
			return fmt.Errorf("put audit entries %d to %d: %w", i, min(i+5000, len(entries)), err)
		}
	}
	return nil
}

// countingKV counts the keys etcd returns to gets, alone or in
// transactions: the keys a store read.
type countingKV struct {
	clientv3.KV
	keys atomic.Int64
}

func (c *countingKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	resp, err := c.KV.Get(ctx, key, opts...)
	if err == nil {
		c.keys.Add(int64(len(resp.Kvs)))
	}
	return resp, err
}

func (c *countingKV) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	resp, err := c.KV.Do(ctx, op)
	if err == nil && resp.Get() != nil {
		c.keys.Add(int64(len(resp.Get().Kvs)))
	}
	return resp, err
}

func (c *countingKV) Txn(ctx context.Context) clientv3.Txn {
	return &countingTxn{Txn: c.KV.Txn(ctx), keys: &c.keys}
}

type countingTxn struct {
	clientv3.Txn
	keys *atomic.Int64
}

func (t *countingTxn) If(cs ...clientv3.Cmp) clientv3.Txn { t.Txn = t.Txn.If(cs...); return t }
func (t *countingTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Then(ops...)
	return t
}
func (t *countingTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *countingTxn) Commit() (*clientv3.TxnResponse, error) {
	resp, err := t.Txn.Commit()
	if err == nil {
		for _, r := range resp.Responses {
			if rr := r.GetResponseRange(); rr != nil {
				t.keys.Add(int64(len(rr.Kvs)))
			}
		}
	}
	return resp, err
}
