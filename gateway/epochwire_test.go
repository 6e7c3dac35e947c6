package gateway_test

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testbrowser"
	"github.com/fencegw/fencegw/internal/testutil/testtimeline"
)

// beyondDoubles is the first integer a JavaScript number cannot hold: as a
// double it reads 9007199254740992.
const beyondDoubles = 9007199254740993

// TestEpochBeyondDoublesRoundTrips: on every store, a raw write at
// 2^53 puts the fence there, so the next grant is 2^53+1, an epoch no
// double holds. The lease answers, the fence, the watch, the audit and a
// problem carry it exactly as a decimal string; the API takes it back as a
// JSON number or string; and the page, in a real browser, shows it
// digit for digit.
func TestEpochBeyondDoublesRoundTrips(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			g := newGatewayWith(t, b.fresh(t)(t), newUpstream(t), gatewayOptions{}, leaseRoutes...)
			if w := g.write(t, "/raw/send", "9007199254740992"); w.status >= 300 {
				t.Fatalf("raw write at 2^53: %d %s", w.status, w.body)
			}
			a := g.acquire(t, "invoice-sweeper", "node-a", 60)
			mustHold(t, "acquire", a, `"epoch":"9007199254740993"`)
			mustHold(t, "lease", do(t, http.MethodGet, g.api.URL+"/v1/leases/invoice-sweeper", nil, ""), `"epoch":"9007199254740993"`)
			mustHold(t, "fence", do(t, http.MethodGet, g.api.URL+"/v1/fences/invoice-sweeper", nil, ""), `"epoch":"9007199254740993"`)
			if e := leaseOf(t, a).Epoch; e != beyondDoubles {
				t.Fatalf("decoded epoch %d", e)
			}
			mustHold(t, "watch", answer{status: 200, body: []byte(firstWatchData(t, g, "invoice-sweeper"))}, `"epoch":"9007199254740993"`)

			// The epoch comes back as a JSON number or as a string.
			mustHold(t, "renew (number)", g.leaseCall(t, "invoice-sweeper", "renew", `{"holder":"node-a","epoch":9007199254740993}`, nil), `"held":true`)
			mustHold(t, "renew (string)", g.leaseCall(t, "invoice-sweeper", "renew", `{"holder":"node-a","epoch":"9007199254740993"}`, nil), `"held":true`)
			for _, bad := range []string{`"9007199254740993.0"`, `"+9007199254740993"`, `" 1"`, `"1e3"`, `-1`, `1.5`, `"9223372036854775808"`, `true`} {
				r := g.leaseCall(t, "invoice-sweeper", "renew", `{"holder":"node-a","epoch":`+bad+`}`, nil)
				if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "epoch") {
					t.Errorf("renew with epoch %s: %d %s, want 400 naming the epoch", bad, r.status, r.body)
				}
			}
			// A stale write at 2^53 through the leased signed route's twin:
			// its refusal is audited with both epochs exact.
			if w := g.write(t, "/raw/send", "9007199254740992"); w.status != http.StatusPreconditionFailed {
				t.Fatalf("stale raw write: %d %s", w.status, w.body)
			}
			g.flushAudit(t)
			hist := do(t, http.MethodGet, g.api.URL+"/v1/audit/leases?"+url.Values{"name": {"invoice-sweeper"}}.Encode(), nil, "")
			mustHold(t, "lease history", hist, `"epoch":"9007199254740993"`)
			rej := do(t, http.MethodGet, g.api.URL+"/v1/audit/rejections?"+url.Values{"resource": {"invoice-sweeper"}}.Encode(), nil, "")
			mustHold(t, "refusals", rej, `"presented_epoch":"9007199254740992"`)
			mustHold(t, "refusals", rej, `"current_epoch":"9007199254740993"`)

			if b.name != "embedded" {
				return // the page reads the same JSON whatever the store
			}
			testtimeline.Check(t, testbrowser.Start(t), g.api.URL, testtimeline.Want{
				Resource:  "invoice-sweeper",
				Grants:    []testtimeline.Grant{{Holder: "node-a", Epoch: beyondDoubles, Ended: "held"}},
				Refusals:  []testtimeline.Refusal{{Decision: "stale", Presented: beyondDoubles - 1, Current: beyondDoubles, Count: 1}},
				Resources: []string{"invoice-sweeper"},
			})
			mustHold(t, "release (string)", g.leaseCall(t, "invoice-sweeper", "release", `{"holder":"node-a","epoch":"9007199254740993"}`, nil), "")
		})
	}
}

// mustHold fails unless a is a success whose body holds want.
func mustHold(t *testing.T, what string, a answer, want string) {
	t.Helper()
	if a.status >= 300 || !strings.Contains(string(a.body), want) {
		t.Fatalf("%s: %d %s, want %s", what, a.status, a.body, want)
	}
}

// firstWatchData opens a watch of name on g and returns the data line of
// its first event (the lease's current state), as the gateway wrote it.
func firstWatchData(t *testing.T, g *gw, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.api.URL+"/v1/leases/"+name+"/watch", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return data
		}
	}
	t.Fatalf("the watch ended without an event: %v", sc.Err())
	return ""
}
