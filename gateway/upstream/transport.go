package upstream

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencegw/fencegw/gateway/guard"

	"golang.org/x/net/http/httpguts"
)

// TransportOptions tune the connections to upstreams.
type TransportOptions struct {
	// DialTimeout bounds connecting to an upstream (0: the system's bound).
	DialTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for an upstream's response
	// headers once the request is sent (0: unbounded); past it the client
	// gets 504.
	ResponseHeaderTimeout time.Duration
	// MaxIdleConnsPerHost is the pool of idle connections kept per upstream
	// (default 256).
	MaxIdleConnsPerHost int
	// TLS, when set, configures TLS toward upstreams (a CA bundle, a server
	// name); the system's roots otherwise.
	TLS *tls.Config
	// DialContext, when set, replaces the dialer (tests count or break
	// connections with it).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// idleTimeout is how long an idle upstream connection is kept.
const idleTimeout = 90 * time.Second

// checkIdleAfter is how long a connection may sit idle before it is checked
// for a close by the upstream when it is taken from the pool: far below
// any keep-alive timeout an upstream closes idle connections at, and long
// enough that connections reused under load are not checked at all.
const checkIdleAfter = 100 * time.Millisecond

// Transport carries the proxy's requests to upstreams. Plain-HTTP
// exchanges go over pooled HTTP/1.1 keep-alive connections, each written
// and read on the calling goroutine, head and small body in one write:
// none of net/http's per-connection goroutines and channel hand-offs.
// HTTPS (HTTP/2 where the upstream offers it), protocol upgrades and
// requests that expect 100-continue go through a net/http Transport with
// the same options.
//
// A request is never sent twice once any of it may have reached the
// upstream, except a replayable one (no body, and GET, HEAD, OPTIONS or
// TRACE) that failed on a reused connection before any answer: the
// upstream may have closed it while idle. Connections idle for more than
// checkIdleAfter are checked for such a close before reuse.
//
// An error before any byte of a request was handed to the kernel (a dial
// error, a refused connection, a failed TLS handshake, an exchange aborted
// before it began) wraps errNothingSent: the upstream cannot have acted on
// it. A resend as above counts the same way when it fails before a byte:
// resending rests on the upstream not having acted on the first attempt.
//
// A write on a leased resource (Admission.DeliverBy) is delivered only
// once the upstream's TCP has acknowledged every byte of it, and its
// answer is returned only then; at DeliverBy, a connection with bytes of
// it unacknowledged is reset (SO_LINGER 0) and the exchange fails with a
// delivery cut, so the upstream sees a torn request, never a late whole
// one. Such writes go over connections with a small send buffer, HTTP/1.1
// only where TLS is involved (an HTTP/2 connection is shared, and is
// neither measured nor reset). A connection that was reset or failed is
// never reused. On systems other than Linux the send queue cannot be
// read: a leased write is delivered once written whole.
type Transport struct {
	std            *http.Transport
	leased         *http.Transport // for leased writes: HTTP/1.1, small send buffers
	dial           func(ctx context.Context, network, addr string) (net.Conn, error)
	headerTimeout  time.Duration
	maxIdlePerHost int

	mu     sync.Mutex
	idle   map[string][]*upstreamConn // by host:port, most recently used last
	closed bool
}

// NewTransport returns the transport the proxy uses: pooled keep-alive
// connections, bounded dial and response-header waits.
func NewTransport(o TransportOptions) *Transport {
	if o.MaxIdleConnsPerHost <= 0 {
		o.MaxIdleConnsPerHost = 256
	}
	d := &net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second}
	dial := o.DialContext
	if dial == nil {
		dial = d.DialContext
	}
	return &Transport{
		std:            stdTransport(o, dial, true),
		leased:         stdTransport(o, smallSendBuffer(dial), false),
		dial:           dial,
		headerTimeout:  o.ResponseHeaderTimeout,
		maxIdlePerHost: o.MaxIdleConnsPerHost,
		idle:           map[string][]*upstreamConn{},
	}
}

// stdTransport returns the net/http Transport with o's options over dial;
// HTTP/1.1 only unless h2.
func stdTransport(o TransportOptions, dial func(ctx context.Context, network, addr string) (net.Conn, error), h2 bool) *http.Transport {
	t := &http.Transport{
		DialContext:           dial,
		ForceAttemptHTTP2:     h2,
		MaxIdleConns:          4 * o.MaxIdleConnsPerHost,
		MaxIdleConnsPerHost:   o.MaxIdleConnsPerHost,
		IdleConnTimeout:       idleTimeout,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: o.ResponseHeaderTimeout,
		ExpectContinueTimeout: time.Second,
		// A small body (up to SmallBodyMax) and a usual head fit in
		// one buffer: one write per request.
		WriteBufferSize: SmallBodyMax + 4<<10,
		// A proxy passes the client's Accept-Encoding on and the
		// upstream's encoding back; it never asks for gzip itself.
		DisableCompression: true,
		TLSClientConfig:    o.TLS,
	}
	if !h2 {
		// An empty map, not nil: net/http then never offers HTTP/2.
		t.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return t
}

// smallSendBuffer wraps dial for the transport of leased writes: its
// connections have the small send buffer of leased writes, and every close
// of one is a reset (SO_LINGER 0). net/http closes a connection whose
// exchange was cancelled (the client went away, the exchange's deadline)
// with a FIN, after which our kernel would still deliver what it holds of
// the write — whole, and after the lapse; a reset drops it. A connection
// closed idle has nothing unsent, so the reset loses nothing there.
func smallSendBuffer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		limitSendBuffer(c)
		if l, ok := rawConn(c).(interface{ SetLinger(int) error }); ok {
			_ = l.SetLinger(0)
		}
		return c, nil
	}
}

// CloseIdleConnections closes the pooled connections that are idle; those
// in use close when their exchange ends.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = map[string][]*upstreamConn{}
	t.mu.Unlock()
	for _, cs := range idle {
		for _, c := range cs {
			c.conn.Close()
		}
	}
	t.std.CloseIdleConnections()
	t.leased.CloseIdleConnections()
}

// RoundTrip sends req and returns the upstream's response; see Transport.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" || req.Header.Get("Expect") != "" || isUpgrade(req.Header) {
		return t.roundTripStd(req)
	}
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	for attempt := 0; ; attempt++ {
		c, err := t.conn(req.Context(), addr)
		if err != nil {
			closeBody(req)
			return nil, fmt.Errorf("%w: %w", ErrNothingSent, err)
		}
		resp, err := c.exchange(req, t.headerTimeout)
		if err == nil {
			return resp, nil
		}
		c.conn.Close()
		if attempt == 0 && c.reused && !c.answered && replayable(req) {
			continue // the upstream closed it while it sat idle
		}
		closeBody(req)
		return nil, err
	}
}

// conn takes an idle connection to addr, or dials one.
func (t *Transport) conn(ctx context.Context, addr string) (*upstreamConn, error) {
	now := time.Now()
	t.mu.Lock()
	for cs := t.idle[addr]; len(cs) > 0; cs = t.idle[addr] {
		c := cs[len(cs)-1]
		t.idle[addr] = cs[:len(cs)-1]
		t.mu.Unlock()
		idle := now.Sub(c.idleSince)
		if idle < idleTimeout && (idle < checkIdleAfter || guard.PeerOpen(c.conn)) {
			c.reused, c.answered = true, false
			return c, nil
		}
		c.conn.Close()
		t.mu.Lock()
	}
	t.mu.Unlock()
	conn, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &upstreamConn{t: t, addr: addr, conn: conn, br: bufio.NewReaderSize(conn, 4<<10)}
	c.bw = bufio.NewWriterSize(connWriter{c}, SmallBodyMax+4<<10)
	return c, nil
}

// put returns c to the pool after a complete exchange.
func (t *Transport) put(c *upstreamConn) {
	c.idleSince = time.Now()
	t.mu.Lock()
	if !t.closed && len(t.idle[c.addr]) < t.maxIdlePerHost {
		t.idle[c.addr] = append(t.idle[c.addr], c)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	c.conn.Close()
}

// upstreamConn is one HTTP/1.1 connection to an upstream.
type upstreamConn struct {
	t         *Transport
	addr      string
	conn      net.Conn
	br        *bufio.Reader
	bw        *bufio.Writer
	idleSince time.Time
	reused    bool // taken from the pool
	leased    bool // has carried a leased write: a small send buffer
	answered  bool // some of a response arrived on it in this exchange

	// sent counts the bytes the kernel took in this exchange (connWriter).
	sent int64
}

// aLongTimeAgo is a deadline in the past: set, it ends blocked I/O now.
var aLongTimeAgo = time.Unix(1, 0)

// exchange writes req on c and reads the response head. The response body
// reads from c; c returns to the pool when the body has been read to its
// end, or closes if the body is closed early. ctx's end (the client went
// away, the exchange's deadline) aborts the I/O.
func (c *upstreamConn) exchange(req *http.Request, headerTimeout time.Duration) (*http.Response, error) {
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNothingSent, err)
	}
	c.sent = 0
	by := DeliverBy(ctx)
	if !by.IsZero() && !time.Now().Before(by) {
		return nil, ErrCutUnsent
	}
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(aLongTimeAgo) })
	if err := c.send(ctx, req, by); err != nil {
		stop()
		return nil, err
	}
	if headerTimeout > 0 || !by.IsZero() {
		var headBy time.Time // none, and none left of the delivery's wait
		if headerTimeout > 0 {
			headBy = time.Now().Add(headerTimeout)
		}
		c.conn.SetReadDeadline(headBy)
		if ctx.Err() != nil { // the abort may have come before the reset
			c.conn.SetDeadline(aLongTimeAgo)
		}
	}
	resp, err := c.readHead(req)
	if err != nil {
		stop()
		if headerTimeout > 0 && ctx.Err() == nil && isTimeout(err) {
			return nil, fmt.Errorf("upstream %s sent no response head within %s: %w", c.addr, headerTimeout, err)
		}
		return nil, c.ctxErr(ctx, fmt.Errorf("read response from %s: %w", c.addr, err))
	}
	if headerTimeout > 0 {
		c.conn.SetReadDeadline(time.Time{})
		if ctx.Err() != nil { // the abort may have come before the reset
			c.conn.SetDeadline(aLongTimeAgo)
		}
	}
	b := &upstreamBody{c: c, body: resp.Body, stop: stop,
		reusable: !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols}
	if resp.Body == http.NoBody {
		b.release(true)
		return resp, nil
	}
	resp.Body = b
	return resp, nil
}

// connWriter writes to its connection and counts the bytes the kernel took.
type connWriter struct{ c *upstreamConn }

func (w connWriter) Write(p []byte) (int, error) {
	n, err := w.c.conn.Write(p)
	w.c.sent += int64(n)
	return n, err
}

// unsent marks err with errNothingSent when no byte of the exchange was
// handed to the kernel: none can have reached the upstream.
func (c *upstreamConn) unsent(err error) error {
	if c.sent == 0 {
		return fmt.Errorf("%w: %w", ErrNothingSent, err)
	}
	return err
}

// roundTripStd sends req through net/http's Transport. An error before it
// got a connection (the dial, the TLS handshake) is marked errNothingSent:
// no byte of the request was written.
func (t *Transport) roundTripStd(req *http.Request) (*http.Response, error) {
	var got atomic.Bool
	ctx := httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { got.Store(true) }})
	rt, leased := t.std, !DeliverBy(req.Context()).IsZero()
	if leased {
		rt = t.leased
	}
	resp, err := RoundTripBefore(rt, noReplay(req.WithContext(ctx), leased))
	if err != nil && !got.Load() {
		return nil, fmt.Errorf("%w: %w", ErrNothingSent, err)
	}
	return resp, err
}

// readHead reads the response head, skipping interim 1xx answers.
func (c *upstreamConn) readHead(req *http.Request) (*http.Response, error) {
	for {
		if _, err := c.br.Peek(1); err != nil {
			return nil, err
		}
		c.answered = true
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
	}
}

// ctxErr prefers ctx's own error, which names why the I/O was aborted.
func (c *upstreamConn) ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}

// upstreamBody is a response body that gives its connection back once it
// has been read to the end.
type upstreamBody struct {
	c        *upstreamConn
	body     io.ReadCloser
	stop     func() bool
	reusable bool
	done     bool
}

func (b *upstreamBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.body.Read(p)
	if err == io.EOF {
		b.release(true)
	} else if err != nil {
		b.release(false)
	}
	return n, err
}

// Close ends the body; before its end, the connection cannot be reused.
func (b *upstreamBody) Close() error {
	b.release(false)
	return nil
}

// release ends the exchange: the connection goes back to the pool when the
// whole response was read (atEOF), may be kept, nothing unread follows it
// and the exchange was not aborted; otherwise it closes.
func (b *upstreamBody) release(atEOF bool) {
	if b.done {
		return
	}
	b.done = true
	b.body.Close()
	aborted := !b.stop()
	if atEOF && b.reusable && !aborted && b.c.br.Buffered() == 0 {
		b.c.t.put(b.c)
		return
	}
	b.c.conn.Close()
}

// isUpgrade reports whether h asks to switch protocols.
func isUpgrade(h http.Header) bool {
	return httpguts.HeaderValuesContainsToken(h["Connection"], "Upgrade")
}

// replayable reports whether req may be sent again after a failure: no
// body, and a method that changes nothing.
func replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.ContentLength != 0 {
		return false
	}
	switch strings.ToUpper(req.Method) {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// closeBody closes req's body when the transport will not send it, as a
// RoundTripper must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// SmallBodyMax is the largest body of known length read whole before it is
// forwarded (see smallBodies).
const SmallBodyMax = 4 << 10
