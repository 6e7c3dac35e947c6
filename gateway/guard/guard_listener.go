package guard

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// ListenerOptions configure NewListener.
type ListenerOptions struct {
	// MaxHeaderBytes is the http.Server's MaxHeaderBytes
	// (http.DefaultMaxHeaderBytes when 0). A request head longer than it
	// plus 4 KiB, net/http's own allowance, is refused with 431.
	MaxHeaderBytes int
	// TLS, when set, makes the listener terminate TLS with this
	// configuration; set NextProtos to offer h2 (e.g. "h2", "http/1.1").
	TLS *tls.Config
	// HandshakeTimeout bounds a TLS handshake (default 10s).
	HandshakeTimeout time.Duration
	// Logger reports failed TLS handshakes at debug level (none when nil).
	Logger *slog.Logger
}

// NewListener returns a listener whose connections refuse requests that
// break HTTP/1.1 framing before net/http reads them (see FramingError):
// such a request is answered 400, 431 or 501 by the handler New builds, and
// nothing of it is forwarded. The server must install ConnContext.
//
// With o.TLS the listener terminates TLS itself: it accepts TCP
// connections and runs each handshake in its own goroutine, bounded by
// o.HandshakeTimeout, so one slow client never holds up Accept. A
// connection that negotiated h2 is handed to net/http as the *tls.Conn
// (HTTP/2's binary framing has no such ambiguities; net/http serves it as
// it would on a tls.Listener); an HTTP/1.x one is guarded, and its TLS
// state reaches r.TLS through ConnContext. Close stops accepting and ends
// the handshakes in progress.
func NewListener(ln net.Listener, o ListenerOptions) net.Listener {
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = http.DefaultMaxHeaderBytes
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	maxHead := o.MaxHeaderBytes + 4096
	if o.TLS == nil {
		return &guardListener{Listener: ln, maxHead: maxHead}
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &tlsGuardListener{ln: ln, o: o, maxHead: maxHead, ctx: ctx, cancel: cancel,
		conns: make(chan net.Conn), errs: make(chan error)}
	l.wg.Add(1)
	go l.acceptLoop()
	return l
}

// guardListener guards the connections of a plain TCP listener.
type guardListener struct {
	net.Listener
	maxHead int
}

func (l *guardListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newGuardConn(c, l.maxHead, nil), nil
}

// tlsGuardListener terminates TLS and guards HTTP/1.x connections.
type tlsGuardListener struct {
	ln        net.Listener
	o         ListenerOptions
	maxHead   int
	ctx       context.Context // canceled by Close
	cancel    context.CancelFunc
	conns     chan net.Conn
	errs      chan error
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// acceptLoop accepts TCP connections and starts their handshakes. An
// accept error is handed to Accept as it is (net/http retries temporary
// ones); the loop ends once the listener is closed.
func (l *tlsGuardListener) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			select {
			case l.errs <- err:
			case <-l.ctx.Done():
				return
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		l.wg.Add(1)
		go l.handshake(c)
	}
}

func (l *tlsGuardListener) handshake(c net.Conn) {
	defer l.wg.Done()
	tc := tls.Server(c, l.o.TLS)
	ctx, cancel := context.WithTimeout(l.ctx, l.o.HandshakeTimeout)
	err := tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		l.o.Logger.Debug("TLS handshake failed", "remote", c.RemoteAddr().String(), "error", err.Error())
		tc.Close()
		return
	}
	var conn net.Conn = tc
	if cs := tc.ConnectionState(); cs.NegotiatedProtocol != "h2" {
		conn = newGuardConn(tc, l.maxHead, &cs)
	}
	select {
	case l.conns <- conn:
	case <-l.ctx.Done():
		conn.Close()
	}
}

func (l *tlsGuardListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case err := <-l.errs:
		return nil, err
	case <-l.ctx.Done():
		return nil, net.ErrClosed
	}
}

// Close stops accepting, ends the handshakes in progress and the
// connections not accepted yet, and waits for their goroutines.
func (l *tlsGuardListener) Close() error {
	l.closeOnce.Do(func() {
		l.cancel()
		l.closeErr = l.ln.Close()
		l.wg.Wait()
	})
	return l.closeErr
}

func (l *tlsGuardListener) Addr() net.Addr { return l.ln.Addr() }
