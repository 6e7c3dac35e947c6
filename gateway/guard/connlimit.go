package guard

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"

	"github.com/fencegw/fencegw/gateway/observe"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
)

// ConnLimitOptions configure LimitConnections.
type ConnLimitOptions struct {
	// Max is the most connections open at once (unlimited when <= 0).
	Max int
	// Listener names the listener in metrics ("proxy", "control").
	Listener string
	// MeterProvider receives fencegw.connections.open, an up-down counter
	// of the connections open, and fencegw.connections.refused, a counter
	// of those closed at the cap, both with the attribute listener (none
	// reported when nil).
	MeterProvider metric.MeterProvider
}

// LimitConnections returns a listener that keeps at most o.Max of ln's
// connections open: a connection accepted while o.Max are open is closed
// at once, unanswered (the client sees its connection closed or reset),
// and counted; Accept then waits for the next. A connection counts from
// its acceptance until its first Close. Wrap the TCP listener itself, so
// that TLS handshakes count too.
func LimitConnections(ln net.Listener, o ConnLimitOptions) (net.Listener, error) {
	mp := o.MeterProvider
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	m := mp.Meter(observe.Instrumentation)
	open, err1 := m.Int64UpDownCounter("fencegw.connections.open",
		metric.WithDescription("Client connections open, per listener."))
	refused, err2 := m.Int64Counter("fencegw.connections.refused",
		metric.WithDescription("Client connections closed unanswered because the listener had max_connections open."))
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	return &limitListener{Listener: ln, max: int64(o.Max), openM: open, refusedM: refused,
		attrs: metric.WithAttributeSet(attribute.NewSet(attribute.String("listener", o.Listener)))}, nil
}

// limitListener is LimitConnections' listener.
type limitListener struct {
	net.Listener
	max      int64
	open     atomic.Int64
	openM    metric.Int64UpDownCounter
	refusedM metric.Int64Counter
	attrs    metric.MeasurementOption
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if n := l.open.Add(1); l.max > 0 && n > l.max {
			l.open.Add(-1)
			l.refusedM.Add(context.Background(), 1, l.attrs) // counted before the client sees it
			c.Close()
			continue
		}
		l.openM.Add(context.Background(), 1, l.attrs)
		return &limitConn{Conn: c, l: l}, nil
	}
}

// limitConn gives its place back on its first Close.
type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.open.Add(-1)
		c.l.openM.Add(context.Background(), -1, c.l.attrs)
	})
	return err
}

// CloseWrite half-closes the connection when it can (net/http uses it to
// let a client read its last answer before the close).
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
