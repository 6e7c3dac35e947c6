package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/problem"
	"github.com/fencegw/fencegw/gateway/upstream"

	"github.com/fencegw/fencegw/gateway"
)

// awaitLapse polls the lease until the store says it is no longer held
// (bounded, not timed).
func (g *gw) awaitLapse(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		a := do(t, http.MethodGet, g.api.URL+"/v1/leases/"+name, nil, "")
		if !leaseOf(t, a).Held {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lease %q still held after 20s", name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLapsedLeaseFencesWrites: once a lease lapses, writes at its epoch
// are refused with 412 through signed and raw routes, even though nobody
// took over; and through every store.
func TestLapsedLeaseFencesWrites(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			up := newUpstream(t)
			g := newGatewayWith(t, b.fresh(t)(t), up, gatewayOptions{}, leaseRoutes...)
			a := leaseOf(t, g.acquire(t, "invoice-sweeper", "node-a", 2))
			raw := map[string]string{gateway.TokenHeader: strconv.FormatInt(int64(a.Epoch), 10)}
			if r := g.write(t, "/bound/x", a.Token); r.status != http.StatusCreated {
				t.Fatalf("write of the live grant = %d %s", r.status, r.body)
			}
			if r := do(t, http.MethodPost, g.proxy.URL+"/raw/x", raw, "payload"); r.status != http.StatusCreated {
				t.Fatalf("raw write of the live grant = %d %s", r.status, r.body)
			}
			g.awaitLapse(t, "invoice-sweeper")
			before := len(up.requests())
			for i, r := range []answer{g.write(t, "/bound/x", a.Token), do(t, http.MethodPost, g.proxy.URL+"/raw/x", raw, "payload")} {
				p := r.problem(t)
				current := any(a.Epoch.String())
				if i == 1 {
					current = nil // a raw epoch's refusal tells no epoch
				}
				if r.status != http.StatusPreconditionFailed || p["type"] != problem.TypeStaleEpoch ||
					!strings.Contains(p["detail"].(string), "lapsed") || p["current_epoch"] != current {
					t.Fatalf("write after the lapse = %d %v", r.status, p)
				}
			}
			if n := len(up.requests()); n != before {
				t.Fatalf("%d refused writes reached the upstream", n-before)
			}
			// A release is fenced as well, and says so.
			c := leaseOf(t, g.acquire(t, "invoice-sweeper", "node-c", 15))
			if r := g.releaseLease(t, "invoice-sweeper", "node-c", int64(c.Epoch)); r.status != http.StatusNoContent {
				t.Fatalf("release = %d %s", r.status, r.body)
			}
			r := g.write(t, "/bound/x", c.Token)
			if p := r.problem(t); r.status != http.StatusPreconditionFailed || !strings.Contains(p["detail"].(string), "released") {
				t.Fatalf("write after the release = %d %v", r.status, p)
			}
		})
	}
}

// TestLockDelay: a lease that lapsed without a release is granted to
// nobody for its lock-delay (409 lock-delay with Retry-After), then is; a
// released one is granted at once whatever its lock-delay.
func TestLockDelay(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			g := newGatewayWith(t, b.fresh(t)(t), newUpstream(t), gatewayOptions{}, leaseRoutes...)
			a := leaseOf(t, g.leaseCall(t, "job", "acquire", fmt.Sprintf(`{"holder":"node-a","ttl_seconds":%d,"lock_delay_seconds":3}`, b.shortTTL()), nil))
			if a.LockDelaySeconds != 3 {
				t.Fatalf("grant = %+v, want lock_delay_seconds 3", a)
			}
			g.awaitLapse(t, "job")
			r := g.acquire(t, "job", "node-b", 15)
			p := r.problem(t)
			retry, _ := strconv.Atoi(r.header.Get("Retry-After"))
			if r.status != http.StatusConflict || p["type"] != problem.TypeLockDelay || p["holder"] != "node-a" ||
				p["current_epoch"] != a.Epoch.String() || retry < 1 || retry > 4 {
				t.Fatalf("acquire in the lock-delay = %d (Retry-After %q) %v", r.status, r.header.Get("Retry-After"), p)
			}
			deadline := time.Now().Add(20 * time.Second)
			for r.status != http.StatusOK {
				if r.status != http.StatusConflict || time.Now().After(deadline) {
					t.Fatalf("acquire after the lock-delay = %d %s", r.status, r.body)
				}
				time.Sleep(100 * time.Millisecond)
				r = g.acquire(t, "job", "node-b", 15)
			}
			b2 := leaseOf(t, r)
			if b2.Epoch != a.Epoch+1 || b2.LockDelaySeconds != 0 {
				t.Fatalf("grant after the delay = %+v", b2)
			}
			// A clean release skips the delay, however long.
			c := leaseOf(t, g.leaseCall(t, "clean", "acquire", `{"holder":"node-a","ttl_seconds":15,"lock_delay_seconds":3600}`, nil))
			if r := g.releaseLease(t, "clean", "node-a", int64(c.Epoch)); r.status != http.StatusNoContent {
				t.Fatalf("release = %d %s", r.status, r.body)
			}
			leaseOf(t, g.acquire(t, "clean", "node-b", 15))
			// Bad lock-delays are 400.
			for _, d := range []string{"-1", "3601", `"5s"`} {
				r := g.leaseCall(t, "bad", "acquire", `{"holder":"node-a","ttl_seconds":15,"lock_delay_seconds":`+d+`}`, nil)
				if r.status != http.StatusBadRequest {
					t.Fatalf("lock_delay_seconds %s = %d %s", d, r.status, r.body)
				}
			}
		})
	}
}

// bodyRecorder is an upstream that notes, for every request, how many
// body bytes it received and whether the body arrived whole.
type bodyRecorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []bodyReceipt
	done chan bodyReceipt
}

type bodyReceipt struct {
	n     int
	whole bool
}

func newBodyRecorder(t *testing.T) *bodyRecorder {
	u := &bodyRecorder{done: make(chan bodyReceipt, 16)}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		rc := bodyReceipt{n: len(b), whole: err == nil && int64(len(b)) == r.ContentLength}
		u.mu.Lock()
		u.got = append(u.got, rc)
		u.mu.Unlock()
		u.done <- rc
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// TestSlowBodyStraddlingTheLapseIsCut: a write admitted while its lease is
// live, whose body is still arriving when the lease runs out, is cut there:
// the client gets 412, and the upstream never receives the whole body —
// nothing of a small body (read whole before forwarding), part of a large
// one, whose upstream connection is closed mid-body.
func TestSlowBodyStraddlingTheLapseIsCut(t *testing.T) {
	for _, b := range backends() {
		for _, size := range []int{1 << 10, 256 << 10} {
			t.Run(fmt.Sprintf("%s/%dKiB", b.name, size>>10), func(t *testing.T) {
				up := newBodyRecorder(t)
				g := newGatewayWith(t, b.fresh(t)(t), &testUpstream{srv: up.srv}, gatewayOptions{}, leaseRoutes...)
				a := leaseOf(t, g.acquire(t, "invoice-sweeper", "node-a", 2))

				conn, err := net.Dial("tcp", strings.TrimPrefix(g.proxy.URL, "http://"))
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				head := fmt.Sprintf("POST /raw/x HTTP/1.1\r\nHost: gw\r\nFencing-Token: %d\r\nContent-Length: %d\r\n\r\n", a.Epoch, size)
				half := strings.Repeat("a", size/2)
				if _, err := io.WriteString(conn, head+half); err != nil {
					t.Fatal(err)
				}
				answered := make(chan *http.Response, 1)
				go func() {
					resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
					if err != nil {
						answered <- nil
						return
					}
					resp.Body.Close()
					answered <- resp
				}()
				g.awaitLapse(t, "invoice-sweeper")
				// The rest arrives after the lapse; the gateway may have
				// closed the connection by now.
				_, _ = io.WriteString(conn, strings.Repeat("a", size-size/2))
				select {
				case resp := <-answered:
					if resp == nil || resp.StatusCode != http.StatusPreconditionFailed {
						t.Fatalf("answer to the straddling write = %v, want 412", resp)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("no answer to the straddling write")
				}
				if size > upstream.SmallBodyMax {
					// The head and part of the body went out; the upstream
					// sees its connection end before the body does.
					select {
					case rc := <-up.done:
						if rc.whole || rc.n >= size {
							t.Fatalf("the upstream received %d of %d bytes whole", rc.n, size)
						}
					case <-time.After(10 * time.Second):
						t.Fatal("the upstream's connection was not cut")
					}
				}
				// Nothing received whole, ever.
				time.Sleep(200 * time.Millisecond)
				up.mu.Lock()
				defer up.mu.Unlock()
				for _, rc := range up.got {
					if rc.whole {
						t.Fatalf("the upstream received the straddling write whole (%d bytes)", rc.n)
					}
				}
				if size <= upstream.SmallBodyMax && len(up.got) != 0 {
					t.Fatalf("a small body was forwarded in part: %v", up.got)
				}
				// The cut write is a refusal the audit counts.
				g.flushAudit(t)
				rej := g.rejectionsOf(t, url.Values{"resource": {"invoice-sweeper"}}).Rejections
				if len(rej) != 1 || rej[0].Count != 1 || rej[0].Decision != "stale" || *rej[0].PresentedEpoch != a.Epoch {
					t.Fatalf("the audit of the cut write: %+v", rej)
				}
			})
		}
	}
}

// TestReleaseAfterExpiryKeepsLockDelay: the red team's case on every
// store. A grant of the store's shortest TTL with a lock-delay, released by
// its holder just after the expires_at it was answered, lapsed: the release
// is 204, and a rival is refused (409: held while the store deletes the
// grant, then lock-delay), never granted, until the delay has run.
func TestReleaseAfterExpiryKeepsLockDelay(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			g := newGatewayWith(t, b.fresh(t)(t), newUpstream(t), gatewayOptions{}, leaseRoutes...)
			a := leaseOf(t, g.leaseCall(t, "job", "acquire", fmt.Sprintf(`{"holder":"node-a","ttl_seconds":%d,"lock_delay_seconds":6}`, b.shortTTL()), nil))
			time.Sleep(time.Until(a.ExpiresAt) + 20*time.Millisecond)
			if r := g.releaseLease(t, "job", "node-a", int64(a.Epoch)); r.status != http.StatusNoContent {
				t.Fatalf("release after the expiry = %d %s", r.status, r.body)
			}
			g.awaitLapse(t, "job")
			r := g.acquire(t, "job", "node-b", 15)
			if p := r.problem(t); r.status != http.StatusConflict || p["type"] != problem.TypeLockDelay {
				t.Fatalf("acquire by a rival after the late release = %d %v, want 409 lock-delay", r.status, p)
			}
		})
	}
}
