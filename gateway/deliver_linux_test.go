//go:build linux

package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/fencegw/fencegw/gateway"
)

// stalledUpstream reads nothing of a request's body until released, then
// reads it all and notes what arrived. Its sockets have a receive buffer
// of a few KiB from their first segment on, so its TCP acknowledges
// little of a body it does not read.
type stalledUpstream struct {
	*slowUpstream
	release chan struct{}
}

// newStalledUpstream starts a stalledUpstream, over TLS when tlsOn; when
// answerFirst, it answers 201 at once and reads the body only when
// released, as an upstream that queues work does.
func newStalledUpstream(t *testing.T, tlsOn, answerFirst bool) *stalledUpstream {
	t.Helper()
	u := &stalledUpstream{slowUpstream: &slowUpstream{done: make(chan bodyReceipt, 16)}, release: make(chan struct{})}
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
		}); err != nil {
			return err
		}
		return serr
	}}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answerFirst {
			// Full duplex: net/http would otherwise read the body first.
			rc := http.NewResponseController(w)
			if err := rc.EnableFullDuplex(); err != nil {
				t.Error(err)
			}
			w.WriteHeader(http.StatusCreated)
			rc.Flush()
		}
		<-u.release
		n, err := io.Copy(io.Discard, r.Body)
		rc := bodyReceipt{n: int(n), whole: err == nil && n == r.ContentLength}
		u.mu.Lock()
		u.got = append(u.got, rc)
		u.mu.Unlock()
		u.done <- rc
		if !answerFirst {
			w.WriteHeader(http.StatusCreated)
		}
	}))
	u.srv.Listener.Close()
	u.srv.Listener = ln
	if tlsOn {
		u.srv.StartTLS()
	} else {
		u.srv.Start()
	}
	t.Cleanup(u.srv.Close)
	t.Cleanup(func() {
		select {
		case <-u.release:
		default:
			close(u.release)
		}
	})
	return u
}

// TestWriteInOwnKernelAtLapseIsCut: issue 23, item 1, where it broke. A
// leased write small enough for the gateway's send buffer is written
// whole before the lapse, but the upstream has not read, and its TCP has
// not acknowledged, most of it: it is not delivered. At the lapse the
// gateway resets the connection; when the upstream reads afterwards it
// finds a torn request, and the client has 412. Through the gateway's own
// connections, TLS, a plain net/http transport, and to an upstream that
// answers before it reads (its answer is not passed on).
func TestWriteInOwnKernelAtLapseIsCut(t *testing.T) {
	const size = 64 << 10
	for _, c := range []struct {
		name                     string
		tlsOn, netHTTP, answered bool
	}{
		{name: "http"},
		{name: "https", tlsOn: true},
		{name: "net-http", netHTTP: true},
		{name: "http-answered-first", answered: true},
		{name: "https-answered-first", tlsOn: true, answered: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := newStalledUpstream(t, c.tlsOn, c.answered)
			tr := up.transportFor()
			if c.netHTTP {
				tr = &http.Transport{}
			}
			g := newGatewayWith(t, boltFresh(t)(t), &testUpstream{srv: up.srv},
				gatewayOptions{transport: tr}, leaseRoutes...)
			a := leaseOf(t, g.acquire(t, "invoice-sweeper", "node-a", 1))
			token := map[string]string{gateway.TokenHeader: strconv.FormatInt(int64(a.Epoch), 10)}
			r := do(t, http.MethodPost, g.proxy.URL+"/raw/x", token, strings.Repeat("a", size))
			p := r.problem(t)
			if r.status != http.StatusPreconditionFailed || p["type"] != problem.TypeStaleEpoch ||
				!strings.Contains(p["detail"].(string), "did not receive all") {
				t.Fatalf("the write undelivered at the lapse = %d %v, want 412 cut", r.status, p)
			}
			close(up.release)
			select {
			case rc := <-up.done:
				if rc.whole || rc.n >= size {
					t.Fatalf("the upstream read %d of %d bytes whole after the lapse", rc.n, size)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the upstream's handler did not end")
			}
		})
	}
}

// TestClientGoneMidWriteLeavesNoWholeWrite: a client that goes away while
// its leased write still sits in our kernel must not leave that write to
// be delivered whole later (after the lapse): the exchange is cancelled,
// and the upstream connection must then be reset, not closed with a FIN
// after which our kernel would go on sending what it holds.
func TestClientGoneMidWriteLeavesNoWholeWrite(t *testing.T) {
	const size = 64 << 10
	for _, tlsOn := range []bool{false, true} {
		t.Run(map[bool]string{false: "http", true: "https"}[tlsOn], func(t *testing.T) {
			up := newStalledUpstream(t, tlsOn, false)
			g := newGatewayWith(t, boltFresh(t)(t), &testUpstream{srv: up.srv},
				gatewayOptions{transport: up.transportFor()}, leaseRoutes...)
			a := leaseOf(t, g.acquire(t, "invoice-sweeper", "node-a", 1))
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.proxy.URL+"/raw/x", strings.NewReader(strings.Repeat("a", size)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set(gateway.TokenHeader, strconv.FormatInt(int64(a.Epoch), 10))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
				t.Fatalf("the write answered %d before the client went away", resp.StatusCode)
			}
			time.Sleep(1500 * time.Millisecond) // past the lapse
			close(up.release)
			select {
			case rc := <-up.done:
				if rc.whole || rc.n >= size {
					t.Fatalf("the upstream read %d of %d bytes whole after the client went away and the lease lapsed", rc.n, size)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the upstream's handler did not end")
			}
		})
	}
}
