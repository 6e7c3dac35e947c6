package gateway_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestLeaseParameterRanges: ttl_seconds and lock_delay_seconds take their
// documented ranges in whole milliseconds, on every store, and are granted
// exactly as asked; anything else is a 400 problem naming the field and
// its range, never a value silently rounded.
func TestLeaseParameterRanges(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			g := newGatewayWith(t, b.fresh(t)(t), newUpstream(t), gatewayOptions{}, leaseRoutes...)
			for _, c := range []struct{ body, field string }{
				{`"ttl_seconds":0.5`, "ttl_seconds"},
				{`"ttl_seconds":0.999`, "ttl_seconds"},
				{`"ttl_seconds":86400.001`, "ttl_seconds"},
				{`"ttl_seconds":1.0005`, "ttl_seconds"},
				{`"ttl_seconds":1.00000000001`, "ttl_seconds"},
				{`"ttl_seconds":1e-400`, "ttl_seconds"},
				{`"ttl_seconds":1e400`, "ttl_seconds"},
				{`"ttl_seconds":15,"lock_delay_seconds":1e-9`, "lock_delay_seconds"},
				{`"ttl_seconds":15,"lock_delay_seconds":0.0005`, "lock_delay_seconds"},
				{`"ttl_seconds":15,"lock_delay_seconds":3600.001`, "lock_delay_seconds"},
				{`"ttl_seconds":15,"lock_delay_seconds":-0.001`, "lock_delay_seconds"},
				{`"ttl_seconds":15,"lock_delay_seconds":1e-4`, "lock_delay_seconds"},
			} {
				r := g.leaseCall(t, "params", "acquire", `{"holder":"a",`+c.body+`}`, nil)
				if r.status != http.StatusBadRequest {
					t.Errorf("%s = %d %s", c.body, r.status, r.body)
					continue
				}
				d, _ := r.problem(t)["detail"].(string)
				if !strings.Contains(d, c.field) || !strings.Contains(d, "millisecond") && !strings.Contains(d, "on this store") {
					t.Errorf("%s: detail %q does not name %s and its range", c.body, d, c.field)
				}
			}
			for i, c := range []struct {
				body       string
				ttl, delay float64
				subSecond  bool // a TTL etcd cannot keep exactly
			}{
				{`"ttl_seconds":1`, 1, 0, true},
				{`"ttl_seconds":1.001,"lock_delay_seconds":0.001`, 1.001, 0.001, true},
				{`"ttl_seconds":1.5,"lock_delay_seconds":6`, 1.5, 6, true},
				{`"ttl_seconds":2.5e0,"lock_delay_seconds":1500e-3`, 2.5, 1.5, true},
				{`"ttl_seconds":2,"lock_delay_seconds":0.001`, 2, 0.001, false},
				{`"ttl_seconds":86400,"lock_delay_seconds":3600`, 86400, 3600, false},
				{`"ttl_seconds":15,"lock_delay_seconds":0`, 15, 0, false},
			} {
				name := "ok-" + string(rune('a'+i))
				if c.subSecond && b.name == "etcd" {
					// etcd keeps lease TTLs in whole seconds, from 2:
					// refused, not kept longer than the answer says.
					r := g.leaseCall(t, name, "acquire", `{"holder":"a",`+c.body+`}`, nil)
					d, _ := r.problem(t)["detail"].(string)
					if r.status != http.StatusBadRequest || !strings.Contains(d, "ttl_seconds") || !strings.Contains(d, "from 2 to 86400") {
						t.Errorf("%s on etcd = %d %s, want 400 naming ttl_seconds and its range", c.body, r.status, r.body)
					}
					continue
				}
				l := leaseOf(t, g.leaseCall(t, name, "acquire", `{"holder":"a",`+c.body+`}`, nil))
				if l.TTLSeconds != c.ttl || l.LockDelaySeconds != c.delay {
					t.Errorf("%s granted ttl %v, lock-delay %v", c.body, l.TTLSeconds, l.LockDelaySeconds)
				}
			}
		})
	}
}
