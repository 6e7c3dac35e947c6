package gateway_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/fencegw/fencegw/wire"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/testutil/testbrowser"
	"github.com/fencegw/fencegw/internal/testutil/testtimeline"
)

// TestUITimelineOfAGateway drives the timeline page of a real gateway in
// headless Chromium, on every store: node-a acquires through replica A
// (with a lock-delay) and renews through replica B, its grant lapses,
// node-b takes over through B once the lock-delay has passed, and node-a's
// write at epoch 1 is refused through A. B's page shows the resource, both
// holders with their epochs (node-a's grant lapsed, followed by a
// lock-delay; node-b's held), and the refusal with its trace link, and
// makes no request outside the gateway.
func TestUITimelineOfAGateway(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			browser := testbrowser.Start(t) // its own: the page polls until its gateway stops
			up := newUpstream(t)
			f := b.fresh(t)
			o := gatewayOptions{observed: newObserved(t), replica: "gw-a", traceURL: "https://tracing.example/trace/{trace_id}"}
			a := newGatewayWith(t, f(t), up, o, leaseRoutes...)
			bee := a
			if b.name != "embedded" {
				o.replica, o.auth = "gw-b", a.auth
				bee = newGatewayWith(t, f(t), up, o, leaseRoutes...)
			}
			first := leaseOf(t, a.leaseCall(t, "invoice-sweeper", "acquire",
				`{"holder":"node-a","ttl_seconds":2,"lock_delay_seconds":1}`, nil))
			if r := bee.renewLease(t, "invoice-sweeper", "node-a", int64(first.Epoch)); r.status != http.StatusOK {
				t.Fatalf("renew: %d %s", r.status, r.body)
			}
			a.awaitLapse(t, "invoice-sweeper")
			var second wire.LeaseState
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				r := bee.acquire(t, "invoice-sweeper", "node-b", 60)
				if r.status == http.StatusOK {
					second = leaseOf(t, r)
					break
				}
				if r.status != http.StatusConflict || time.Now().After(deadline) {
					t.Fatalf("node-b's acquire: %d %s", r.status, r.body)
				}
			}
			header, traceID := traceparent(7)
			w := do(t, http.MethodPost, a.proxy.URL+"/raw/send", map[string]string{gateway.TokenHeader: strconv.FormatInt(int64(first.Epoch), 10),
				"Traceparent": header}, "stale")
			if w.status != http.StatusPreconditionFailed {
				t.Fatalf("node-a's stale write: %d %s", w.status, w.body)
			}
			a.flushAudit(t)
			bee.flushAudit(t)

			testtimeline.Check(t, browser, bee.api.URL, testtimeline.Want{
				Resource: "invoice-sweeper",
				Grants: []testtimeline.Grant{
					{Holder: "node-a", Epoch: int64(first.Epoch), Ended: "lapsed"},
					{Holder: "node-b", Epoch: int64(second.Epoch), Ended: "held"},
				},
				Refusals:  []testtimeline.Refusal{{Decision: "stale", Presented: int64(first.Epoch), Current: int64(second.Epoch), Count: 1}},
				LockDelay: true,
				Resources: []string{"invoice-sweeper"},
				TraceURLs: []string{"https://tracing.example/trace/" + traceID},
			})
			if b.name == "postgres" {
				testtimeline.SaveScreenshot(t, browser)
			}
		})
	}
}
