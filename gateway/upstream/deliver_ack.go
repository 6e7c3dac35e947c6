package upstream

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httptrace"
	"sync"
	"time"
)

// A write on a leased resource is delivered when the upstream's TCP has
// acknowledged every byte of it, not when our own kernel took it: bytes
// still in our send queue at the lapse would reach the upstream after it.
// At the write's deadline (Admission.DeliverBy) a connection with bytes
// still unacknowledged is reset (SO_LINGER 0), which drops them: the
// upstream sees a torn request, never a late whole one. Where the send
// queue cannot be read (other systems than Linux, HTTP/2 connections
// shared by several requests, connections that are not sockets), a write
// counts as delivered once written whole.

// errUnmeasurable says a connection's unacknowledged bytes cannot be read.
var errUnmeasurable = errors.New("the connection's send queue cannot be read")

// leasedSendBuffer is the send buffer (SO_SNDBUF) of a connection that
// carries leased writes: small, so that a write cannot sit in our kernel
// for long after it was written, and what is cut at a deadline is little.
const leasedSendBuffer = 64 << 10

// ackPollMin and ackPollMax bound the interval at which a written leased
// write's unacknowledged bytes are polled.
const (
	ackPollMin = time.Millisecond
	ackPollMax = 5 * time.Millisecond
)

// rawConn returns the connection under c's TLS, or c itself.
func rawConn(c net.Conn) net.Conn {
	for {
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return c
		}
		c = u.NetConn()
	}
}

// abortConn closes c's connection with a reset: SO_LINGER 0 drops every
// byte its peer has not acknowledged, and the peer's next read fails. The
// raw connection is closed, never a TLS layer above it, whose close would
// first try to write an alert.
func abortConn(c net.Conn) {
	raw := rawConn(c)
	if l, ok := raw.(interface{ SetLinger(int) error }); ok {
		_ = l.SetLinger(0)
	}
	raw.Close()
}

// limitSendBuffer gives c's connection the send buffer of leased writes.
func limitSendBuffer(c net.Conn) {
	if b, ok := rawConn(c).(interface{ SetWriteBuffer(int) error }); ok {
		_ = b.SetWriteBuffer(leasedSendBuffer)
	}
}

// nextPoll is when to look at a send queue again: after wait, not after by.
func nextPoll(now, by time.Time, wait time.Duration) time.Time {
	if t := now.Add(wait); t.Before(by) {
		return t
	}
	return by
}

// sleepUntil waits until t or ctx's end, whichever comes first.
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// deliveryState is where a leased write sent through a net/http transport
// stands.
type deliveryState int

const (
	deliveryPending   deliveryState = iota
	deliveryDelivered               // acknowledged whole (or written whole, where unmeasurable)
	deliveryCut                     // the deadline came first; the connection was reset
	deliveryUnknown                 // sent, and its send queue cannot be read
	deliveryEnded                   // the exchange failed before either
	// deliveryUncertain: the deadline came when the write may have left
	// whole (written, or its body read to the end) but was not yet
	// acknowledged whole; the connection was reset, and the upstream may
	// or may not have all of it (errDeliveryUncertain).
	deliveryUncertain
)

// delivery follows one leased write through a transport whose connections
// this package does not hold (net/http's): httptrace tells it the
// connection (GotConn) and the end of the write (WroteRequest); check
// decides, at any moment, whether the write is delivered, or cuts it when
// its deadline has come. Its methods are safe for concurrent use.
type delivery struct {
	by    time.Time
	mu    sync.Mutex
	conn  net.Conn // the raw connection; nil until known, or when shared
	known bool     // GotConn came
	wrote bool
	// bodyRead: the transport read the request's body to its end, so all
	// of the write may have left before WroteRequest says so.
	bodyRead bool
	state    deliveryState
}

// trace returns the httptrace hooks that feed d.
func (d *delivery) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{GotConn: d.gotConn, WroteRequest: d.wroteRequest}
}

func (d *delivery) gotConn(info httptrace.GotConnInfo) {
	d.mu.Lock()
	defer d.mu.Unlock()
	// A second connection is net/http's retry of a request it had not
	// written (noReplay keeps it from resending one it had): the write
	// starts over there.
	d.wrote = false
	d.known = true
	if tc, ok := info.Conn.(*tls.Conn); ok && tc.ConnectionState().NegotiatedProtocol == "h2" {
		return // other requests share it: neither measured nor reset
	}
	d.conn = rawConn(info.Conn)
}

func (d *delivery) wroteRequest(info httptrace.WroteRequestInfo) {
	if info.Err != nil {
		return
	}
	d.mu.Lock()
	d.wrote = true
	d.mu.Unlock()
}

// check decides what it can now: delivered once written and acknowledged
// whole, unknown once written where acknowledgements cannot be read, and
// cut (the connection reset) when the deadline has come before either.
func (d *delivery) check() deliveryState {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state != deliveryPending {
		return d.state
	}
	if d.wrote {
		n, err := 0, errUnmeasurable
		if d.conn != nil {
			n, err = unacked(d.conn)
		}
		switch {
		case errors.Is(err, errUnmeasurable):
			d.state = deliveryUnknown
			return d.state
		case err == nil && n == 0 && time.Now().Before(d.by):
			// Read before the deadline: acknowledged in time. Seen only
			// after it (a stalled process, a late poll), it may have been
			// acknowledged after the lapse: uncertain, below.
			d.state = deliveryDelivered
			return d.state
		}
	}
	if !time.Now().Before(d.by) {
		// The reset drops what has not left our kernel; what has left may
		// all have reached the upstream, unacknowledged yet (a delayed
		// ACK). A write whose body was not even read to its end, or whose
		// tail has not left, is cut; one that may all have left is
		// uncertain.
		unsent := d.conn != nil && abortTailUnsent(d.conn)
		d.state = deliveryCut
		if (d.wrote || d.bodyRead) && !unsent {
			d.state = deliveryUncertain
		}
	}
	return d.state
}

// abortTailUnsent reads whether some of the bytes written on conn have not
// been sent at all (notSent) and resets conn at once (abortConn), which
// drops them: then the upstream cannot have the whole write. When that
// cannot be read, the bytes may all have left: the answer is false, and
// the delivery uncertain. The read and the reset are two system calls: a
// window update from the upstream between them (microseconds) can still
// let the tail out, the one race this classification leaves (see
// docs/guarantee.md).
func abortTailUnsent(conn net.Conn) bool {
	ns, err := notSent(conn)
	abortConn(conn)
	return err == nil && ns > 0
}

// readBody marks that the transport read the request's body to its end.
func (d *delivery) readBody() {
	d.mu.Lock()
	d.bodyRead = true
	d.mu.Unlock()
}

// watchedBody is a request body that tells its delivery when it was read
// to its end.
type watchedBody struct {
	io.ReadCloser
	d *delivery
}

func (b watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.d.readBody()
	}
	return n, err
}

// end records that the exchange failed, and returns the state it ended in.
// A write neither delivered nor cut yet has its connection reset: what our
// kernel still holds of it must not reach the upstream later.
func (d *delivery) end() deliveryState {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state == deliveryPending {
		if d.conn != nil {
			abortConn(d.conn)
		}
		d.state = deliveryEnded
	}
	return d.state
}

// written reports whether the write was written whole.
func (d *delivery) written() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.wrote
}

// await polls until the write is delivered or cut, or cannot be known
// (deliveryUnknown), or ctx ends. When the connection never came (the
// transport does not trace) it returns deliveryPending at once: it is
// left to check at the deadline.
func (d *delivery) await(ctx context.Context) (deliveryState, error) {
	d.mu.Lock()
	known := d.known
	d.mu.Unlock()
	if !known {
		return deliveryPending, nil
	}
	for wait := ackPollMin; ; wait = min(2*wait, ackPollMax) {
		switch st := d.check(); st {
		case deliveryPending:
		case deliveryCut:
			return st, fmt.Errorf("%w: the upstream had not acknowledged all of it", errDeliveryCut)
		case deliveryUncertain:
			return st, fmt.Errorf("%w: the upstream had not acknowledged all of it", errDeliveryUncertain)
		default:
			return st, nil
		}
		if err := sleepUntil(ctx, nextPoll(time.Now(), d.by, wait)); err != nil {
			return deliveryPending, err
		}
	}
}
