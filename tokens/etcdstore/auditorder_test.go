package etcdstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/etcdstore"
	"github.com/fencegw/fencegw/tokens/storetest"
)

// readLog records the range reads a client sends, alone or in
// transactions, and counts the keys etcd returns to them and the keys
// etcd counted for the reads of ranges sent alone (it counts every key of
// a range, whatever the limit).
type readLog struct {
	mu      sync.Mutex
	ranges  []*pb.RangeRequest
	keys    int
	counted int64
}

// intercept is a gRPC client interceptor that records req and reply.
func (l *readLog) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch r := req.(type) {
	case *pb.RangeRequest:
		l.ranges = append(l.ranges, r)
	case *pb.TxnRequest:
		l.txn(r)
	}
	if err != nil {
		return err
	}
	switch r := reply.(type) {
	case *pb.RangeResponse:
		l.keys += len(r.Kvs)
		if rr := req.(*pb.RangeRequest); len(rr.RangeEnd) > 0 && !rr.CountOnly {
			l.counted += r.Count
		}
	case *pb.TxnResponse:
		l.keys += txnKeys(r)
	}
	return nil
}

// txn records the range reads of r, nested transactions' included.
func (l *readLog) txn(r *pb.TxnRequest) {
	for _, op := range slices.Concat(r.Success, r.Failure) {
		if rr := op.GetRequestRange(); rr != nil {
			l.ranges = append(l.ranges, rr)
		}
		if t := op.GetRequestTxn(); t != nil {
			l.txn(t)
		}
	}
}

// txnKeys counts the keys r's range reads returned.
func txnKeys(r *pb.TxnResponse) int {
	n := 0
	for _, op := range r.Responses {
		n += len(op.GetResponseRange().GetKvs())
		if t := op.GetResponseTxn(); t != nil {
			n += txnKeys(t)
		}
	}
	return n
}

// reset forgets what was recorded, after checking it (check).
func (l *readLog) reset(t *testing.T, what string) {
	t.Helper()
	l.check(t, what)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ranges, l.keys, l.counted = nil, 0, 0
}

// keysRead returns how many keys etcd returned since the last reset, and
// how many it counted for ranges read alone.
func (l *readLog) keysRead() (returned int, counted int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.keys, l.counted
}

// check fails t if a range read recorded is sorted other than by
// ascending key (etcd then reads the whole range, whatever the limit) or
// reads a range of keys, not only counting them, without a limit.
func (l *readLog) check(t *testing.T, what string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.ranges {
		ascending := r.SortOrder == pb.RangeRequest_NONE ||
			r.SortOrder == pb.RangeRequest_ASCEND && r.SortTarget == pb.RangeRequest_KEY
		if !ascending {
			t.Errorf("%s: range read of %q sorted %v by %v", what, r.Key, r.SortOrder, r.SortTarget)
		}
		if len(r.RangeEnd) > 0 && !r.CountOnly && r.Limit == 0 {
			t.Errorf("%s: range read of [%q, %q) without a limit", what, r.Key, r.RangeEnd)
		}
	}
}

// recordingStore returns a Store over c under prefix whose client's reads
// log records.
func recordingStore(t *testing.T, c *testetcd.Cluster, prefix string) (*etcdstore.Store, *readLog) {
	t.Helper()
	log := &readLog{}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(log.intercept)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	s := etcdstore.New(cli, prefix)
	t.Cleanup(func() { _ = s.Close() })
	return s, log
}

// orderEntries returns n refusals of AuditBenchEntries, a third of them
// stale: 100 to an interval, so that pages end inside intervals.
func orderEntries(n int) []tokens.AuditEntry {
	entries := storetest.AuditBenchEntries(n)
	for i := range entries {
		if i%3 == 0 {
			entries[i].Kind = "stale"
		}
	}
	return entries
}

// expectPage is what ListAudit must return for q over all.
func expectPage(all []tokens.AuditEntry, q tokens.AuditQuery) []string {
	var ids []string
	for _, e := range all {
		if e.Stream == q.Stream && q.Matches(e) && (q.Before == "" || e.ID < q.Before) {
			ids = append(ids, e.ID)
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return strings.Compare(b, a) })
	return ids[:min(len(ids), q.Limit)]
}

// orderQueries are the queries the tests below page through.
func orderQueries() []tokens.AuditQuery {
	at := func(sec float64) time.Time {
		return storetest.AuditBenchEntries(1)[0].First.Add(time.Duration(sec * float64(time.Second)))
	}
	return []tokens.AuditQuery{
		{Limit: 1000}, {Limit: 10}, {Limit: 73}, {Resource: "res-7", Limit: 1}, {Kind: "stale", Limit: 45},
		{Since: at(3.2), Until: at(5), Limit: 64}, {Kind: "missing", Until: at(2.5), Limit: 50},
		{Resource: "res-42", Since: at(9), Limit: 1000}, {Holder: "nobody", Limit: 10}, {Until: at(0), Limit: 33},
	}
}

// pageAll lists q's pages, following the cursor, checking each against
// all and, when perEntry is not zero, the keys read for it: at most
// perEntry per entry listed plus two batches returned, at most two per
// entry plus four batches counted by etcd (not the rest of the index).
func pageAll(t *testing.T, s *etcdstore.Store, log *readLog, all []tokens.AuditEntry, q tokens.AuditQuery, perEntry int) [][]string {
	t.Helper()
	q.Stream = tokens.AuditRefusals
	var pages [][]string
	for {
		log.reset(t, fmt.Sprintf("before %+v", q))
		got, err := s.ListAudit(context.Background(), q)
		if err != nil {
			t.Fatalf("ListAudit(%+v): %v", q, err)
		}
		ids := make([]string, len(got))
		for i, e := range got {
			ids[i] = e.ID
		}
		if want := expectPage(all, q); !slices.Equal(ids, want) {
			t.Fatalf("ListAudit(%+v) = %d entries %v…; want %d %v…", q, len(ids), ids[:min(len(ids), 3)], len(want), want[:min(len(want), 3)])
		}
		if n, counted := log.keysRead(); perEntry > 0 && (n > perEntry*len(ids)+2*256 || counted > int64(2*len(ids)+4*256)) {
			t.Fatalf("ListAudit(%+v): %d keys read, %d counted, for %d entries", q, n, counted, len(ids))
		}
		log.check(t, fmt.Sprintf("ListAudit(%+v)", q))
		pages = append(pages, ids)
		if len(ids) < q.Limit || len(pages) > len(all) {
			return pages
		}
		q.Before = ids[len(ids)-1]
	}
}

// TestAuditReadsAscending: every read of the audit is an ascending range
// read with a limit, the only one whose limit etcd applies (a range
// sorted otherwise is read whole whatever its limit), and a page reads
// at most two keys per entry (index key and entry) plus two batches, and
// has etcd count no more than two per entry plus four batches, not the
// rest of the log: listing, paging, filtering, purging and listing the
// resources.
func TestAuditReadsAscending(t *testing.T) {
	c := testetcd.Start(t, 1)
	s, log := recordingStore(t, c, "/order/")
	entries := orderEntries(3000)
	if err := s.PutAudit(timeout(t, 30*time.Second), entries); err != nil {
		t.Fatal(err)
	}
	log.reset(t, "PutAudit")
	for _, q := range orderQueries() {
		perEntry := 2
		if q.Holder != "" {
			perEntry = 0 // no index serves it: it reads the whole log
		}
		pageAll(t, s, log, entries, q, perEntry)
	}
	names, err := s.ListAuditResources(context.Background(), tokens.AuditResourceQuery{Prefix: "res-99", Limit: 5})
	if err != nil || !slices.Equal(names, []string{"res-99", "res-990", "res-991", "res-992", "res-993"}) {
		t.Fatalf("ListAuditResources = %q, %v", names, err)
	}
	log.reset(t, "ListAuditResources")
	before := entries[0].First.Add(10 * time.Second) // the first 1,000 entries
	for {
		n, err := s.PurgeAudit(context.Background(), tokens.AuditRefusals, before, len(entries), 300)
		if err != nil {
			t.Fatal(err)
		}
		log.reset(t, "PurgeAudit")
		if n < 300 {
			break
		}
	}
	if n, err := s.CountAuditIndex(context.Background(), tokens.AuditRefusals); err != nil || n != 2*2000 {
		t.Fatalf("CountAuditIndex after the purge = %d, %v; want %d", n, err, 2*2000)
	}
	pageAll(t, s, log, entries[1000:], tokens.AuditQuery{Limit: 500}, 2)
}

// putV1Audit writes entries into the audit under prefix as the first
// layout of the index kept them: entries, index keys by resource and kind
// ending in the ID as it is, and the version key that says it is
// complete.
func putV1Audit(t *testing.T, cli *clientv3.Client, prefix string, entries []tokens.AuditEntry) {
	t.Helper()
	for len(entries) > 0 {
		n := min(len(entries), 40)
		var ops []clientv3.Op
		for _, e := range entries[:n] {
			v, _ := json.Marshal(e)
			ops = append(ops, clientv3.OpPut(prefix+"\x00audit/"+string(e.Stream)+"/"+e.ID, string(v)))
			for _, k := range tokens.AuditIndexKeys(e) {
				ops = append(ops, clientv3.OpPut(prefix+"\x00auditidx/"+string(e.Stream)+"/"+k, ""))
			}
		}
		if _, err := cli.Txn(timeout(t, 10*time.Second)).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
		entries = entries[n:]
	}
	if _, err := cli.Put(timeout(t, 10*time.Second), prefix+"\x00auditidx-version", "1"); err != nil {
		t.Fatal(err)
	}
}

// TestAuditIndexMigrates: a store whose index is of the first layout (IDs
// ascending) lists the same pages while its index is rebuilt in the
// inverted layout and after, and the first layout's keys are gone.
func TestAuditIndexMigrates(t *testing.T) {
	c := testetcd.Start(t, 1)
	const prefix = "/migrate/"
	cli := c.Client(t)
	entries := orderEntries(1200)
	putV1Audit(t, cli, prefix, entries)
	s, log := recordingStore(t, c, prefix)
	var before [][][]string
	for _, q := range orderQueries() {
		before = append(before, pageAll(t, s, log, entries, q, 0)) // the first starts the backfill
	}
	if err := s.IndexAudit(timeout(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	log.reset(t, "IndexAudit")
	for i, q := range orderQueries() {
		perEntry := 2
		if q.Holder != "" {
			perEntry = 0
		}
		if after := pageAll(t, s, log, entries, q, perEntry); !slices.EqualFunc(after, before[i], slices.Equal) {
			t.Fatalf("%+v: pages differ after the migration", q)
		}
	}
	if n, err := s.CountAuditIndex(context.Background(), tokens.AuditRefusals); err != nil || n != 2*len(entries) {
		t.Fatalf("CountAuditIndex = %d, %v; want %d", n, err, 2*len(entries))
	}
	for key, want := range map[string]int64{"\x00auditidx/": 0, "\x00auditidx-version": 0, "\x00auditidx-backfill/": 0,
		"\x00auditidx2-version": 1, "\x00auditidx2-backfill/": 0} {
		r, err := cli.Get(timeout(t, 10*time.Second), prefix+key, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil || r.Count != want {
			t.Errorf("keys under %q after the migration: %v, %v; want %d", key, r, err, want)
		}
	}
}
