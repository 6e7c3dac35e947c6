package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// send writes req on c. A write on a leased resource (by is set) must be
// delivered before by: no byte of it is written after that moment, and it
// is delivered only once the upstream's TCP has acknowledged all of it
// (see awaitAcked). A leased write that fails, or is not delivered by
// then (a delivery cut), has its connection reset, so that nothing our
// kernel still holds of it reaches the upstream.
func (c *upstreamConn) send(ctx context.Context, req *http.Request, by time.Time) error {
	if by.IsZero() {
		return c.write(ctx, req)
	}
	if !c.leased {
		limitSendBuffer(c.conn)
		c.leased = true
	}
	c.conn.SetWriteDeadline(by)
	err := c.write(ctx, req)
	if err == nil {
		c.conn.SetWriteDeadline(time.Time{})
		err = c.awaitAcked(ctx, by)
	}
	if err != nil {
		abortConn(c.conn)
		if errors.Is(err, errDeliveryUncertain) {
			return err
		}
		return cutAfter(by, err)
	}
	return nil
}

// write writes req whole on c.
func (c *upstreamConn) write(ctx context.Context, req *http.Request) error {
	err := req.Write(c.bw)
	if err == nil {
		err = c.bw.Flush()
	}
	if err != nil {
		return c.unsent(c.ctxErr(ctx, fmt.Errorf("write request to %s: %w", c.addr, err)))
	}
	return nil
}

// awaitAcked waits until the upstream's TCP has acknowledged every byte
// written on c, polling c's send queue; while it waits, the upstream's
// answer may begin to arrive, and stays unread in c.br. When by comes
// first it returns a delivery cut, or an uncertain delivery when every
// byte had left (see lapsedUnacked). Where the send queue cannot be read,
// written is delivered. It leaves c's read deadline set.
func (c *upstreamConn) awaitAcked(ctx context.Context, by time.Time) error {
	peek := true // until the answer begins, wait on it rather than sleep
	for wait := ackPollMin; ; wait = min(2*wait, ackPollMax) {
		n, err := unacked(c.conn)
		switch {
		case errors.Is(err, errUnmeasurable):
			return nil
		case err != nil:
			return fmt.Errorf("delivery to %s: %w", c.addr, err)
		}
		// The clock is read after the queue: acknowledged whole counts as
		// delivered only when seen before by. Seen after it (the process
		// stalled, the poll came late), the acknowledgement may have come
		// after the lapse: uncertain.
		now := time.Now()
		if !now.Before(by) {
			return lapsedUnacked(c.conn, c.addr, n)
		}
		if n == 0 {
			return nil
		}
		next := nextPoll(now, by, wait)
		if peek {
			peek, err = c.peekUntil(ctx, next)
		} else {
			err = sleepUntil(ctx, next)
		}
		if err != nil {
			return err
		}
	}
}

// peekUntil waits until t for the upstream's answer to begin, and reports
// whether it has not.
func (c *upstreamConn) peekUntil(ctx context.Context, t time.Time) (bool, error) {
	c.conn.SetReadDeadline(t)
	if err := ctx.Err(); err != nil { // the abort may have come before the reset
		return false, err
	}
	_, err := c.br.Peek(1)
	switch {
	case err == nil:
		return false, nil
	case isTimeout(err) && ctx.Err() == nil:
		return true, nil
	}
	return false, c.ctxErr(ctx, fmt.Errorf("read response from %s: %w", c.addr, err))
}

// lapsedUnacked is the error of a write whose deadline came with n bytes
// unacknowledged on conn; it resets conn. Bytes not yet sent (held by the
// upstream's closed window) are dropped by the reset, so the upstream
// cannot have the whole write: a delivery cut. When every byte had left,
// the upstream may hold all of it and only not have acknowledged it yet (a
// delayed ACK): the delivery is uncertain, never reported as a cut. So it
// is when all was acknowledged but that was seen only after the deadline.
func lapsedUnacked(conn net.Conn, addr string, n int) error {
	if n == 0 {
		return fmt.Errorf("%w: %s acknowledged all of it, but that was seen only after the deadline", errDeliveryUncertain, addr)
	}
	if abortTailUnsent(conn) {
		return fmt.Errorf("%w: %s had not acknowledged %d bytes of it", errDeliveryCut, addr, n)
	}
	return fmt.Errorf("%w: all of it may have left, %s had not acknowledged %d bytes", errDeliveryUncertain, addr, n)
}
