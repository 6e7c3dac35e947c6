package audit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/audit"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/wire"
)

// TestAuditRecorderClassBudgets: junk that fills its own budget (here
// 20,000 refusals without a token over 500 routes, 100 entries kept)
// drops junk only: the stale refusal and the grant recorded after it are
// kept and written, and 20,000 junk names on one route are one entry.
func TestAuditRecorderClassBudgets(t *testing.T) {
	a, store, reader := newRecorder(t, audit.Options{Interval: time.Hour, MaxPending: 100, JunkMaxPending: 100})
	now := time.Now()
	for i := range 20000 {
		a.Refused(now, wire.Rejection{Resource: fmt.Sprintf("tenant-%d", i), Decision: string(tokens.DecisionMissing),
			Route: fmt.Sprintf("/r%d/", i%500), Status: 428}, "")
	}
	for i := range 20000 {
		a.Refused(now, wire.Rejection{Resource: fmt.Sprintf("other-%d", i), Decision: string(tokens.DecisionInvalid),
			Route: "/r0/", Status: 400}, "")
	}
	a.Refused(now, stale("invoice-sweeper", 1), "")
	a.Lease(now, tokens.LeaseAcquired, tokens.Lease{Name: "invoice-sweeper", Holder: "node-b", Epoch: 2}, nil, "")
	if err := a.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(listAll(t, store, tokens.AuditRefusals)); n != 1 {
		t.Fatalf("%d refusals of a presented token written, want the stale one", n)
	}
	if n := len(listAll(t, store, tokens.AuditLeases)); n != 1 {
		t.Fatalf("%d lease events written, want the grant", n)
	}
	junk := listAll(t, store, tokens.AuditJunk)
	var invalid int64
	for _, e := range junk {
		if e.Resource != "" {
			t.Fatalf("a junk entry keeps a name: %+v", e)
		}
		if e.Kind == string(tokens.DecisionInvalid) {
			invalid += e.Count
		}
	}
	// The first 100 kinds (route, reason) fill the junk budget: the
	// invalid tokens on /r0/ come after them and are dropped, counted.
	if len(junk) != 100 || invalid != 0 || sumCounter(t, reader, "fencegw.audit.dropped") != 20000+20000-20000*100/500 {
		t.Fatalf("junk: %d entries, %d invalid counted, %d dropped", len(junk), invalid,
			sumCounter(t, reader, "fencegw.audit.dropped"))
	}
}
