package gateway_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/wire"
)

// zeroSource is an epoch source whose leader holds epoch 0 (a Kubernetes
// Lease's first leaseTransitions), live until lapsed is set.
type zeroSource struct{ lapsed atomic.Bool }

func (s *zeroSource) Check(_ context.Context, resource string, epoch int64) error {
	switch {
	case epoch > 0:
		return &tokens.EpochNotIssuedError{Resource: resource, Presented: epoch, Issued: 0}
	case s.lapsed.Load():
		return &tokens.StaleEpochError{Resource: resource, Presented: epoch, Current: 0, Reason: "the leader's lease lapsed"}
	}
	return nil
}

// TestEpochZeroReported: a write at epoch 0 that an epoch source vouches
// for is admitted, and one it says lapsed is refused, and both report
// epoch 0 as presented — on the span, in the refusal's log line, its
// problem and its audit entry as the API lists it — while a write without
// a token reports no epoch.
func TestEpochZeroReported(t *testing.T) {
	o := newObserved(t)
	log := &countingHandler{}
	src := &zeroSource{}
	g := newGatewayWith(t, boltFresh(t)(t), newUpstream(t), gatewayOptions{observed: o, log: log,
		sources: map[string]tokensEpochSource{"/sourced/": src}}, routeSpec{prefix: "/sourced/", resource: "zeroed"})

	send := func(i int, token string, status int) map[attribute.Key]attribute.Value {
		t.Helper()
		tp, traceID := traceparent(i)
		h := map[string]string{"traceparent": tp}
		if token != "" {
			h[gateway.TokenHeader] = token
		}
		if a := do(t, "POST", g.proxy.URL+"/sourced/x", h, "x"); a.status != status {
			t.Fatalf("write %d with token %q: %d %s, want %d", i, token, a.status, a.body, status)
		} else if status != 201 && token != "" {
			if p := a.problem(t); p["presented_epoch"] != "0" {
				t.Errorf("write %d: problem presented_epoch %v, want \"0\"", i, p["presented_epoch"])
			}
		}
		return attrs(o.serverSpan(t, traceID))
	}
	presented := func(name string, got map[attribute.Key]attribute.Value, want bool) {
		t.Helper()
		v, ok := got["fencing.epoch.presented"]
		if ok != want || (ok && v.AsInt64() != 0) {
			t.Errorf("%s: span's fencing.epoch.presented = %v (set %v), want set %v at 0", name, v.AsInterface(), ok, want)
		}
	}
	admitted := send(0, "0", 201)
	presented("admitted", admitted, true)
	if v := admitted["fencing.epoch_source"]; v.AsString() != "kubernetes" {
		t.Errorf("admitted: span's fencing.epoch_source = %q, want the route's source kind", v.AsString())
	}
	if v, ok := admitted["fencing.epoch.current"]; !ok || v.AsInt64() != 0 {
		t.Errorf("admitted: span's fencing.epoch.current = %v (set %v), want 0", v.AsInterface(), ok)
	}
	src.lapsed.Store(true)
	presented("lapsed", send(1, "0", 412), true)
	presented("no token", send(2, "", 428), false)

	var stale, missing int
	log.mu.Lock()
	for _, m := range log.recs {
		e, ok := m["presented_epoch"]
		switch {
		case m["msg"] != "fenced write refused":
		case m["decision"] == "stale":
			stale++
			if !ok || e != int64(0) {
				t.Errorf("stale log line %v: want presented_epoch 0", m)
			}
		case m["decision"] == "missing":
			missing++
			if ok {
				t.Errorf("missing log line %v: want no presented_epoch", m)
			}
		}
	}
	log.mu.Unlock()
	if stale != 1 || missing != 1 {
		t.Errorf("log lines: %d stale, %d missing, want 1 each", stale, missing)
	}

	// The decisions counter names the source kind that judged them.
	if counts := o.counts(t, "fencegw.decisions", "epoch_source"); counts["kubernetes"] != 3 || len(counts) != 1 {
		t.Errorf("decisions by epoch_source = %v, want 3 by kubernetes", counts)
	}

	g.flushAudit(t)
	a := do(t, "GET", g.api.URL+"/v1/audit/rejections?"+url.Values{"resource": {"zeroed"}}.Encode(), nil, "")
	var list wire.Rejections
	if err := json.Unmarshal(a.body, &list); err != nil || len(list.Rejections) != 1 {
		t.Fatalf("audit = %s (%v), want the one stale write", a.body, err)
	}
	if rej := list.Rejections[0]; rej.EpochSource != "kubernetes" {
		t.Errorf("audit = %s, want epoch_source \"kubernetes\" (the route's source kind)", a.body)
	}
	if rej := list.Rejections[0]; rej.Decision != "stale" || rej.PresentedEpoch == nil || *rej.PresentedEpoch != 0 ||
		!strings.Contains(string(a.body), `"presented_epoch":"0"`) {
		t.Fatalf("audit = %s, want the stale write with presented_epoch \"0\"", a.body)
	}
}
