package guard

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencegw/fencegw/gateway/problem"
)

// syntheticHead is what a guarded connection hands net/http in place of a
// request that broke the framing rules. The handler New builds answers it
// with the violation; should the server lack ConnContext, its path is
// unclean on purpose, so the route check refuses it and it is forwarded
// nowhere either.
const syntheticHead = "GET /.fencegw/framing-error/.. HTTP/1.1\r\nHost: fencegw.invalid\r\nConnection: close\r\n\r\n"

// connState is what a guarded connection shares with the handlers serving
// its requests (through ConnContext).
type connState struct {
	// tls is the connection's TLS state when the guard terminates TLS.
	tls *tls.ConnectionState
	// passThrough: the connection was hijacked; its bytes are no longer HTTP.
	passThrough atomic.Bool
	// paused: scanning waits at the end of an upgrade request (pausedAt)
	// until that request is answered without a hijack; mu orders pausing
	// against answering (done counts the requests answered).
	paused   atomic.Bool
	mu       sync.Mutex
	pausedAt int64
	done     int64
	// violation is the violation the synthetic request answers.
	violation atomic.Pointer[problem.FramingError]
	// cutOff is a violation found in the body of the request being read,
	// whose head was handed over: that request's body read fails.
	cutOff atomic.Pointer[problem.FramingError]
	// synthetic is 1 + the index of the synthetic request among the
	// connection's requests, 0 while there is none.
	synthetic atomic.Int64
	// served counts the requests handlers have seen on the connection.
	served atomic.Int64
}

// syntheticFor returns the violation when request i is the synthetic one.
func (st *connState) syntheticFor(i int64) *problem.FramingError {
	if st.synthetic.Load() == i+1 {
		return st.violation.Load()
	}
	return nil
}

// pause makes scanning wait after request i, unless i was answered
// already (before its body was read); it reports whether it did.
func (st *connState) pause(i int64) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if i < st.done {
		return false
	}
	st.pausedAt = i
	st.paused.Store(true)
	return true
}

// requestDone records that request i was answered without a hijack, and
// lets scanning go on if it waited there.
func (st *connState) requestDone(i int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.done = max(st.done, i+1)
	if st.paused.Load() && st.pausedAt == i {
		st.paused.Store(false)
	}
}

// guardConn runs a client's bytes through the framing scanner before
// net/http reads them. A request head reaches net/http only once it is
// whole and valid, and only after every byte already received behind it
// was validated too; body data streams through as it arrives.
//
// A violation found before the offending request's head was handed over:
// the bytes before that request are handed over, then syntheticHead, then
// EOF, so net/http serves the requests before it and then the synthetic
// one, which the handler answers with the violation. Nothing of the
// offending request is ever forwarded.
//
// A violation found once the head was handed over (in body bytes that
// arrived later, such as a bad chunk-size line): Read fails, so the
// proxy's read of the body fails and the upstream never receives a whole
// request (its connection is closed mid-body); the proxy answers the
// violation. Without buffering whole bodies nothing better is possible:
// the upstream may have seen the head and part of the body.
//
// After a request with an Upgrade field, scanning waits until that request
// is answered: a hijack (101 Switching Protocols) turns the connection
// into a pass-through; otherwise scanning goes on where it stopped.
type guardConn struct {
	net.Conn
	st      *connState
	sc      *framingScanner
	buf     []byte // received, not handed over: buf[off:]
	off     int
	scanned int   // buf[:scanned] was scanned
	safe    int   // buf[off:safe] may be handed over
	handed  int64 // stream bytes handed over
	heads   int64 // request heads counted (OPTIONS * aside: net/http answers it)
	counted bool  // the request in progress was counted
	synth   []byte
	fail    error // after a violation mid-body, or an EOF kept for later
	maxHeld int
}

func newGuardConn(c net.Conn, maxHead int, cs *tls.ConnectionState) *guardConn {
	return &guardConn{Conn: c, st: &connState{tls: cs}, sc: newFramingScanner(maxHead),
		maxHeld: maxHead + chunkLineMax + trailerMax}
}

// Read hands over the bytes that passed the scanner; see guardConn.
func (c *guardConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if c.st.passThrough.Load() {
			if c.off < len(c.buf) {
				n := copy(p, c.buf[c.off:])
				c.off += n
				return n, nil
			}
			return c.Conn.Read(p)
		}
		if n := c.handOver(p); n > 0 {
			return n, nil
		}
		if c.synth != nil {
			if len(c.synth) == 0 {
				return 0, io.EOF
			}
			n := copy(p, c.synth)
			c.synth = c.synth[n:]
			return n, nil
		}
		if c.fail != nil {
			return 0, c.fail
		}
		paused := c.st.paused.Load()
		switch {
		case !paused && c.scanned < len(c.buf):
			// An upgrade request was answered without a hijack: go on.
			n, safe := c.scan(c.buf[c.scanned:], c.handed-int64(c.off)+int64(c.scanned))
			c.scanned += n
			c.safe = int(safe - (c.handed - int64(c.off)))
		case !paused && c.off == len(c.buf):
			// Nothing held back: read straight into p, and keep only what
			// must wait.
			n, err := c.Conn.Read(p)
			if k := c.scanDirect(p[:n]); k > 0 {
				c.keepEOF(err)
				return k, nil
			}
			if err != nil && !c.keepEOF(err) {
				return 0, err
			}
		default:
			if err := c.fill(paused); err != nil {
				return 0, err
			}
		}
	}
}

// handOver copies to p the bytes that may be handed over.
func (c *guardConn) handOver(p []byte) int {
	if c.safe <= c.off {
		return 0
	}
	n := copy(p, c.buf[c.off:c.safe])
	c.off += n
	c.handed += int64(n)
	if c.off == len(c.buf) {
		c.buf, c.off, c.scanned, c.safe = c.buf[:0], 0, 0, 0
	}
	return n
}

// keepEOF keeps an EOF for the Read after the bytes in hand.
func (c *guardConn) keepEOF(err error) bool {
	if errors.Is(err, io.EOF) {
		c.fail = io.EOF
		return true
	}
	return false
}

// scanDirect scans p, read while nothing was held back, and returns how
// many of its bytes may be handed over now; it keeps the rest that must
// wait (and drops what follows a violation).
func (c *guardConn) scanDirect(p []byte) int {
	if len(p) == 0 {
		return 0
	}
	n, safe := c.scan(p, c.handed)
	k := int(safe - c.handed)
	c.handed += int64(k)
	if c.synth == nil && c.fail == nil {
		c.buf, c.off, c.scanned, c.safe = append(c.buf[:0], p[k:]...), 0, n-k, 0
	}
	return k
}

// fill reads more of the stream after the bytes held back, and scans it
// unless scanning waits.
func (c *guardConn) fill(paused bool) error {
	if paused && len(c.buf)-c.off >= c.maxHeld {
		fe := &problem.FramingError{Status: http.StatusBadRequest,
			Detail: "too many bytes sent after an upgrade request before its answer"}
		c.st.cutOff.Store(fe)
		c.fail = fe
		return fe
	}
	if c.off > 0 {
		c.buf = c.buf[:copy(c.buf, c.buf[c.off:])]
		c.scanned -= c.off
		c.safe -= c.off
		c.off = 0
	}
	c.buf = slices.Grow(c.buf, 4096)
	n, err := c.Conn.Read(c.buf[len(c.buf):cap(c.buf)])
	c.buf = c.buf[:len(c.buf)+n]
	if n > 0 && !paused {
		m, safe := c.scan(c.buf[c.scanned:], c.handed+int64(c.scanned))
		c.scanned += m
		c.safe = int(safe - c.handed)
	}
	if err != nil && !c.keepEOF(err) && n == 0 {
		return err
	}
	return nil
}

// scan feeds data, whose first byte is at stream position base, to the
// scanner until it is all validated, a violation is found, or an upgrade
// request ends. It returns how many bytes it scanned, and the stream
// position up to which bytes may be handed over.
func (c *guardConn) scan(data []byte, base int64) (int, int64) {
	n := 0
	for n < len(data) {
		k, ev, err := c.sc.feed(data[n:])
		n += k
		if err != nil {
			return n, c.violate(err.(*problem.FramingError))
		}
		if ev&evHead != 0 && !c.sc.req.asterisk {
			c.heads++
			c.counted = true
		}
		if ev&evMessage != 0 {
			upgrade := c.sc.req.upgrade && c.counted
			c.counted = false
			if upgrade && c.st.pause(c.heads-1) {
				break
			}
		}
	}
	return n, c.sc.safe()
}

// violate records a violation and returns the stream position up to which
// bytes may still be handed over: the start of the offending request when
// its head was not handed over yet (the synthetic request follows), what
// was handed over otherwise (Read fails from now on).
func (c *guardConn) violate(fe *problem.FramingError) int64 {
	start := c.sc.msgStart
	if c.handed > start {
		c.st.cutOff.Store(fe)
		c.fail = fe
		return c.handed
	}
	c.st.violation.Store(fe)
	before := c.heads
	if c.counted {
		before--
	}
	c.st.synthetic.Store(before + 1)
	c.synth = []byte(syntheticHead)
	return start
}

// lingerMax bounds how long, and lingerBytes how much of, a client's input
// is read and dropped after a framing refusal before the connection closes.
const (
	lingerMax   = 500 * time.Millisecond
	lingerBytes = 256 << 10
)

// Close closes the connection. After a framing refusal the client may
// still be sending the request that broke framing: closing with its bytes
// unread would reset the connection, and the client would see the reset
// instead of the refusal. So the guard half-closes first and reads and
// drops what still comes, within lingerMax and lingerBytes.
func (c *guardConn) Close() error {
	if c.st.violation.Load() != nil || c.st.cutOff.Load() != nil {
		if c.CloseWrite() == nil && c.SetReadDeadline(time.Now().Add(lingerMax)) == nil {
			io.Copy(io.Discard, io.LimitReader(c.Conn, lingerBytes))
		}
	}
	return c.Conn.Close()
}

// CloseWrite half-closes the connection when the underlying one can, so
// net/http can end it gracefully after an answer.
func (c *guardConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
