package gateway_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fencegw/fencegw/gateway/upstream"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/server"
)

// writeCountingConn counts the writes made on a connection.
type writeCountingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c writeCountingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestSmallBodiesLeaveInOneWrite: a body of known length up to
// SmallBodyMax reaches the upstream in the same write as the request head;
// a larger one streams after it. Either way the upstream gets it whole.
func TestSmallBodiesLeaveInOneWrite(t *testing.T) {
	up := newUpstream(t)
	var writes atomic.Int64
	var d net.Dialer
	tr := upstream.NewTransport(upstream.TransportOptions{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return writeCountingConn{c, &writes}, nil
	}})
	t.Cleanup(tr.CloseIdleConnections)
	c := embeddedConfig(t)
	c.Routes = []config.Route{{Prefix: "/w/", Upstream: up.srv.URL, Tokens: config.TokensRaw, Resource: "r"}}
	url, stop := serveForBench(t, assemble(t, c, server.Options{Transport: tr}))
	t.Cleanup(stop)
	for _, tc := range []struct {
		size, writes int
	}{
		{40, 1}, {upstream.SmallBodyMax, 1}, {upstream.SmallBodyMax + 1, 2}, {64 << 10, 2},
	} {
		writes.Store(0)
		body := strings.Repeat("x", tc.size)
		a := do(t, http.MethodPost, url+"/w/x", map[string]string{gateway.TokenHeader: "5"}, body)
		if a.status != http.StatusCreated || string(a.body) != "stored:"+body {
			t.Fatalf("%d-byte body: %d, the upstream stored %d bytes", tc.size, a.status, len(a.body)-len("stored:"))
		}
		if got := writes.Load(); got < int64(tc.writes) || (tc.writes == 1 && got != 1) {
			t.Errorf("%d-byte body: %d writes to the upstream, want %d", tc.size, got, tc.writes)
		}
	}
}
