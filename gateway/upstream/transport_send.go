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
//
// A reset drops only what the upstream has not acknowledged yet: bytes it
// acknowledges between our last look at the send queue and the reset
// reach it all the same. So the request's last byte is held back until the
// upstream acknowledged everything before it: a cut before that byte left
// is certain to leave the upstream a torn request (errDeliveryCut); a
// deadline that comes while the last byte itself is unacknowledged leaves
// the outcome unknown (errDeliveryUncertain), never reported as a cut.
func (c *upstreamConn) send(ctx context.Context, req *http.Request, by time.Time) error {
	if by.IsZero() {
		return c.write(ctx, req)
	}
	if !c.leased {
		limitSendBuffer(c.conn)
		c.leased = true
	}
	c.conn.SetWriteDeadline(by)
	held := &heldWriter{c: c}
	c.bw.Reset(held)
	err := c.write(ctx, req)
	c.bw.Reset(connWriter{c})
	if err == nil {
		// No answer can begin before the last byte: poll, from 50µs.
		err = c.awaitAcked(ctx, by, false, heldPollMin)
	}
	if err == nil {
		var sent bool
		sent, err = held.release()
		if sent {
			c.conn.SetWriteDeadline(time.Time{})
			if err == nil {
				err = c.awaitAcked(ctx, by, true, ackPollMin)
			}
			if err != nil {
				abortConn(c.conn)
				return uncertainAfter(by, err)
			}
			return nil
		}
	}
	abortConn(c.conn)
	return cutAfter(by, err)
}

// heldWriter writes to its connection every byte it is given but the
// last, which it holds until release (see upstreamConn.send). It counts the
// bytes the kernel took, as connWriter does.
type heldWriter struct {
	c    *upstreamConn
	last [1]byte
	has  bool
}

func (w *heldWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var bufs net.Buffers
	if w.has {
		bufs = append(bufs, w.last[:])
	}
	if len(p) > 1 {
		bufs = append(bufs, p[:len(p)-1])
	}
	had := int64(0)
	if w.has {
		had = 1
	}
	n, err := bufs.WriteTo(w.c.conn) // one writev
	w.c.sent += n
	if err != nil {
		if n >= had {
			w.has = false
		}
		return int(max(n-had, 0)), err
	}
	w.last[0], w.has = p[len(p)-1], true
	return len(p), nil
}

// release writes the held byte; sent reports whether the kernel took it.
func (w *heldWriter) release() (sent bool, err error) {
	if !w.has {
		return false, errors.New("nothing of the request was held back")
	}
	n, err := w.c.conn.Write(w.last[:])
	w.c.sent += int64(n)
	return n == 1, err
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

// heldPollMin is the first interval at which the send queue of a write
// whose last byte is held back is polled: nothing else can end the wait.
const heldPollMin = 50 * time.Microsecond

// awaitAcked waits until the upstream's TCP has acknowledged every byte
// written on c, polling c's send queue from every first to every
// ackPollMax; with peek, until the upstream's answer begins it waits on
// that rather than sleeps (the answer stays unread in c.br). It returns a
// delivery cut when by comes first. Where the send queue cannot be read,
// written is delivered. It leaves c's read deadline set.
func (c *upstreamConn) awaitAcked(ctx context.Context, by time.Time, peek bool, first time.Duration) error {
	for wait := first; ; wait = min(2*wait, ackPollMax) {
		n, err := unacked(c.conn)
		switch {
		case errors.Is(err, errUnmeasurable):
			return nil
		case err != nil:
			return fmt.Errorf("delivery to %s: %w", c.addr, err)
		case n == 0:
			return nil
		}
		now := time.Now()
		if !now.Before(by) {
			return fmt.Errorf("%w: %s had not acknowledged %d bytes of it", errDeliveryCut, c.addr, n)
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
