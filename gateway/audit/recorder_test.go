package audit_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/audit"

	"github.com/fencegw/fencegw/wire"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/fencegw/fencegw/internal/testutil/teststore"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/boltstore"
)

func newRecorder(t *testing.T, o audit.Options) (*audit.Recorder, *teststore.AuditCounter, *sdkmetric.ManualReader) {
	t.Helper()
	bs, err := boltstore.Open(filepath.Join(t.TempDir(), "fencegw.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bs.Close() })
	store := &teststore.AuditCounter{Store: bs}
	reader := sdkmetric.NewManualReader()
	o.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	a, err := audit.NewRecorder(store, o)
	if err != nil {
		t.Fatal(err)
	}
	return a, store, reader
}

func stale(resource string, presented int64) wire.Rejection {
	return wire.Rejection{Resource: resource, Decision: string(tokens.DecisionStale), PresentedEpoch: wire.EpochOf(presented),
		Route: "/w/", Status: 412}
}

func listAll(t *testing.T, s tokens.Store, stream tokens.AuditStream) []tokens.AuditEntry {
	t.Helper()
	es, err := s.ListAudit(context.Background(), tokens.AuditQuery{Stream: stream, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// sumCounter is the sum of counter name's data points.
func sumCounter(t *testing.T, r *sdkmetric.ManualReader, name string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					n += dp.Value
				}
			}
		}
	}
	return n
}

// TestAuditRecorderCounts: identical refusals are one entry with their
// count, first and last time and at most MaxAuditSamples trace ids;
// refusals that differ are entries of their own.
func TestAuditRecorderCounts(t *testing.T) {
	a, store, _ := newRecorder(t, audit.Options{Replica: "gw-1", Interval: time.Hour})
	t0 := time.Now().Truncate(time.Hour).Add(time.Minute)
	for i := range 10 {
		a.Refused(t0.Add(time.Duration(i)*time.Second), stale("r", 1), fmt.Sprintf("%032x", i))
	}
	a.Refused(t0, stale("r", 2), "")
	a.Refused(t0, stale("q", 1), "")
	if err := a.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	es := listAll(t, store, tokens.AuditRefusals)
	byKey := map[string]tokens.AuditEntry{}
	for _, e := range es {
		byKey[fmt.Sprintf("%s/%d", e.Resource, e.Epoch)] = e
	}
	r1 := byKey["r/1"]
	switch {
	case len(es) != 3,
		r1.Count != 10 || !r1.First.Equal(t0) || !r1.Last.Equal(t0.Add(9*time.Second)) || r1.Replica != "gw-1",
		len(r1.TraceIDs) != tokens.MaxAuditSamples || r1.TraceIDs[0] != fmt.Sprintf("%032x", 0),
		byKey["r/2"].Count != 1 || byKey["q/1"].Count != 1:
		t.Fatalf("entries: %+v", es)
	}
	// Nothing changed: nothing is written.
	puts := store.Puts.Load()
	if err := a.Flush(context.Background()); err != nil || store.Puts.Load() != puts {
		t.Fatalf("a flush with nothing new wrote (%v)", err)
	}
}

// TestAuditRecorderBoundsMemory: while the store is down, entries wait in
// memory up to MaxPending; events needing more are dropped and counted in
// fencegw.audit.dropped, and the failed writes in
// fencegw.audit.write_failures. Once the store is back every kept count is
// written, and entries of intervals that ended are forgotten.
func TestAuditRecorderBoundsMemory(t *testing.T) {
	a, store, reader := newRecorder(t, audit.Options{Interval: time.Minute, MaxPending: 100})
	// Events of an interval that has ended: once written, their entries
	// are forgotten.
	at := time.Now().Add(-time.Hour)
	store.Down.Store(true)
	for i := range 150 {
		a.Refused(at, stale(fmt.Sprintf("r%d", i), 1), "")
	}
	for range 5 { // kinds already kept still count
		a.Refused(at, stale("r0", 1), "")
	}
	if err := a.Flush(context.Background()); err == nil {
		t.Fatal("a flush to a store that is down succeeded")
	}
	if a.Pending() != 100 || sumCounter(t, reader, "fencegw.audit.dropped") != 50 ||
		sumCounter(t, reader, "fencegw.audit.write_failures") != 1 {
		t.Fatalf("pending %d, dropped %d, write failures %d; want 100, 50, 1", a.Pending(),
			sumCounter(t, reader, "fencegw.audit.dropped"), sumCounter(t, reader, "fencegw.audit.write_failures"))
	}
	store.Down.Store(false)
	if err := a.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, e := range listAll(t, store, tokens.AuditRefusals) {
		total += e.Count
	}
	if total != 105 || a.Pending() != 0 {
		t.Fatalf("written %d refusals, pending %d; want 105 and 0", total, a.Pending())
	}
}

// TestAuditRecorderLeaseEvents: renewals of a grant are one entry with
// their count and the latest expiry; a lapse noticed twice is one entry.
func TestAuditRecorderLeaseEvents(t *testing.T) {
	a, store, _ := newRecorder(t, audit.Options{Replica: "gw-1", Interval: time.Hour})
	t0 := time.Now().Truncate(time.Hour).Add(time.Minute)
	l := tokens.Lease{Name: "r", Holder: "node-a", Epoch: 3, TTL: 10 * time.Second}
	for i := range 4 {
		l.ExpiresAt = t0.Add(time.Duration(i)*time.Second + l.TTL)
		a.Lease(t0.Add(time.Duration(i)*time.Second), tokens.LeaseRenewed, l, nil, "")
	}
	a.Lease(t0.Add(-time.Second), tokens.LeaseExpired, l, nil, "")
	if err := a.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.Lease(t0.Add(-time.Second), tokens.LeaseExpired, l, nil, "")
	if err := a.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	es := listAll(t, store, tokens.AuditLeases)
	kinds := map[string]tokens.AuditEntry{}
	for _, e := range es {
		kinds[e.Kind] = e
	}
	ren := kinds[tokens.LeaseRenewed]
	if len(es) != 2 || ren.Count != 4 || !ren.ExpiresAt.Equal(t0.Add(3*time.Second+l.TTL)) || kinds[tokens.LeaseExpired].Count != 1 {
		t.Fatalf("lease entries: %+v", es)
	}
}
