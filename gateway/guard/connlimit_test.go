package guard_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/guard"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// connCounts returns fencegw.connections.open and .refused for listener.
func connCounts(t *testing.T, r *sdkmetric.ManualReader, listener string) (open, refused int64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				if v, _ := dp.Attributes.Value("listener"); v.AsString() != listener {
					continue
				}
				switch m.Name {
				case "fencegw.connections.open":
					open += dp.Value
				case "fencegw.connections.refused":
					refused += dp.Value
				}
			}
		}
	}
	return open, refused
}

// TestLimitConnections: with max connections open, the next one is closed
// unanswered and counted as refused; closing one (twice) frees one place.
func TestLimitConnections(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := guard.LimitConnections(raw, guard.ConnLimitOptions{Max: 2, Listener: "control", MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dial()
	dial()
	first, second := <-accepted, <-accepted
	defer second.Close()
	over := dial()
	over.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := over.Read(make([]byte, 1)); n != 0 || err == nil || connTimedOut(err) {
		t.Fatalf("a connection beyond the cap: read %d, %v; want it closed", n, err)
	}
	if open, refused := connCounts(t, reader, "control"); open != 2 || refused != 1 {
		t.Fatalf("at the cap: open %d, refused %d; want 2 and 1", open, refused)
	}
	first.Close()
	first.Close()
	dial()
	third := <-accepted
	defer third.Close()
	if _, err := third.Write([]byte("served")); err != nil {
		t.Fatal(err)
	}
	if open, refused := connCounts(t, reader, "control"); open != 2 || refused != 1 {
		t.Fatalf("after one closed and another came: open %d, refused %d; want 2 and 1", open, refused)
	}
	ln.Close()
	if _, ok := <-accepted; ok {
		t.Fatal("Accept after Close")
	}
}

func connTimedOut(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
