package faults

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// proxyChunkSize is the most a pump reads at once: a chunk is the unit
	// that Latency delays.
	proxyChunkSize = 32 << 10
	// proxyQueueLen is how many chunks a direction holds in flight before the
	// proxy stops reading from the sender (TCP flow control takes over).
	proxyQueueLen = 64
	// proxyDialTimeout bounds the connection to the target.
	proxyDialTimeout = 5 * time.Second
)

// Fault is what a Proxy does to the traffic it forwards. The zero Fault
// forwards faithfully. Fields combine, except that Reset overrides the
// others and Blackhole makes Latency and SlowClose moot.
type Fault struct {
	// Latency delays each chunk of bytes, in both directions, by this much
	// from the moment the proxy read it. Chunks of one direction are
	// delivered in order: when Latency shrinks, later chunks wait for the
	// earlier ones.
	Latency time.Duration
	// Blackhole makes every connection, existing and new, swallow what it
	// reads in both directions and deliver nothing: no bytes, no close, no
	// reset. New connections are accepted but never reach the target.
	// A connection that was open while a blackhole was in force stays dead
	// for good, even after the fault is lifted: the bytes it dropped left a
	// hole in its stream, so its ends can only time out. Once the fault is
	// lifted, a close by one end of a dead connection (before or after) is
	// delivered to the other as a reset, as a real peer would answer TCP's
	// retransmissions, so that servers do not keep the sessions of clients
	// that gave up. Connections accepted after the fault is lifted work
	// normally.
	Blackhole bool
	// Reset closes every existing connection with a TCP RST on both sides
	// at once, and resets each new connection as soon as it is accepted,
	// for as long as it is in force.
	Reset bool
	// SlowClose delays the delivery of a close (a FIN, or a reset the
	// sender's side received) by this much more than bytes are delayed.
	SlowClose time.Duration
}

// Stats counts what a Proxy did since it was created.
type Stats struct {
	Accepted  int64 // connections accepted from clients
	Forwarded int64 // connections opened to the target for them
	ToTarget  int64 // bytes delivered to the target
	ToClient  int64 // bytes delivered to clients
	Dropped   int64 // bytes read while a blackhole was in force, never delivered
}

// Proxy forwards TCP connections from its loopback listener to a target
// address, with faults (see Fault). Its methods are safe for concurrent
// use. Each client connection gets its own connection to the target,
// opened when the client's is accepted.
type Proxy struct {
	ln     net.Listener
	ctx    context.Context // cancelled by Close: ends dials
	cancel context.CancelFunc
	wg     sync.WaitGroup // the accept loop and one goroutine per link

	mu     sync.Mutex
	target string
	fault  Fault
	links  map[*proxyLink]struct{}
	closed bool

	accepted, forwarded, toTarget, toClient, dropped atomic.Int64
}

// NewProxy starts a proxy listening on 127.0.0.1 at a free port, forwarding
// to target ("host:port") with no fault. The caller must Close it.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{ln: ln, ctx: ctx, cancel: cancel, target: target, links: map[*proxyLink]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the "host:port" clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetTarget makes connections accepted from now on go to target; existing
// ones keep theirs.
func (p *Proxy) SetTarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}

// Set puts f in force from now on, for new and existing connections, in
// place of the previous fault. Set(Fault{}) heals: new connections work at
// once, but connections a blackhole killed stay dead (see Fault.Blackhole).
// Latency and SlowClose apply to what is read after the call.
func (p *Proxy) Set(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = f
	for l := range p.links {
		switch {
		case f.Reset:
			l.close(true)
		case f.Blackhole:
			l.blackhole()
		case l.isDead() && l.ended.Load():
			l.close(true) // see Fault.Blackhole
		}
	}
}

// Stats returns the counts so far.
func (p *Proxy) Stats() Stats {
	return Stats{
		Accepted:  p.accepted.Load(),
		Forwarded: p.forwarded.Load(),
		ToTarget:  p.toTarget.Load(),
		ToClient:  p.toClient.Load(),
		Dropped:   p.dropped.Load(),
	}
}

// Close stops listening, closes every connection on both sides (peers read
// EOF, or a reset if they had unread data in flight) and waits until the
// proxy's goroutines have ended. Later calls return nil.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	err := p.ln.Close()
	p.cancel()
	for l := range p.links {
		l.close(false)
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// serve accepts connections until the listener is closed.
func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // e.g. out of file descriptors
			continue
		}
		p.admit(c.(*net.TCPConn))
	}
}

// admit applies the fault in force to a newly accepted connection and, if
// it lives, starts its link.
func (p *Proxy) admit(c *net.TCPConn) {
	p.accepted.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		c.Close()
		return
	case p.fault.Reset:
		c.SetLinger(0)
		c.Close()
		return
	}
	l := &proxyLink{p: p, client: c, dead: make(chan struct{}), done: make(chan struct{})}
	if p.fault.Blackhole {
		l.blackhole()
	}
	p.links[l] = struct{}{}
	p.wg.Add(1)
	go l.run(p.target)
}

func (p *Proxy) forget(l *proxyLink) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.links, l)
}

func (p *Proxy) faultNow() Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fault
}

// proxyLink is one client connection and its connection to the target. Each
// direction has a reader, which reads chunks from one side and queues them
// stamped with their delivery time, and a writer, which delivers them to
// the other side in order when due.
type proxyLink struct {
	p      *Proxy
	client *net.TCPConn

	mu     sync.Mutex
	server *net.TCPConn  // nil until dialed; never dialed if dead at accept
	dead   chan struct{} // closed when a blackhole kills the link
	done   chan struct{} // closed when both connections are closed
	ended  atomic.Bool   // an end of the dead link closed its side
}

// proxyChunk is a piece of one direction's stream: bytes, or its end (eof),
// which is a reset when the sender's side was reset rather than closed.
type proxyChunk struct {
	data  []byte
	eof   bool
	reset bool
	due   time.Time
}

func (l *proxyLink) run(target string) {
	defer l.p.wg.Done()
	defer l.p.forget(l)
	if !l.isDead() { // a link dead at accept never reaches the target
		var d net.Dialer
		ctx, cancel := context.WithTimeout(l.p.ctx, proxyDialTimeout)
		s, err := d.DialContext(ctx, "tcp", target)
		cancel()
		if err != nil {
			l.close(true) // as close as a proxy gets to "connection refused"
			return
		}
		if !l.attach(s.(*net.TCPConn)) {
			return
		}
		l.p.forwarded.Add(1)
	}
	var wg sync.WaitGroup
	up := make(chan proxyChunk, proxyQueueLen)
	wg.Go(func() { l.read(l.client, up) })
	if l.server != nil {
		down := make(chan proxyChunk, proxyQueueLen)
		wg.Go(func() { l.write(up, l.server, &l.p.toTarget) })
		wg.Go(func() { l.read(l.server, down) })
		wg.Go(func() { l.write(down, l.client, &l.p.toClient) })
	}
	wg.Wait()
	l.close(false)
}

// attach records the connection to the target, or closes it and returns
// false if the link was closed while dialing.
func (l *proxyLink) attach(s *net.TCPConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.done:
		s.Close()
		return false
	default:
	}
	l.server = s
	return true
}

// read queues what src sends, then its end, until src ends or the link is
// closed. While the link is dead it drops what it reads instead.
func (l *proxyLink) read(src *net.TCPConn, q chan<- proxyChunk) {
	buf := make([]byte, proxyChunkSize)
	for {
		n, err := src.Read(buf)
		c := proxyChunk{data: append([]byte(nil), buf[:n]...), eof: err != nil}
		if c.eof {
			c.reset = !errors.Is(err, io.EOF)
		}
		if n == 0 && !c.eof {
			continue
		}
		f := l.p.faultNow()
		c.due = time.Now().Add(f.Latency)
		if c.eof {
			c.due = c.due.Add(f.SlowClose)
		}
		if l.isDead() {
			l.p.dropped.Add(int64(n))
		} else {
			select {
			case q <- c:
			case <-l.dead:
				l.p.dropped.Add(int64(n))
			case <-l.done:
				return
			}
		}
		if c.eof {
			if l.isDead() {
				// Set resets the link if the blackhole is lifted after this
				// (see Fault.Blackhole); this resets it if it was before.
				l.ended.Store(true)
				if !l.p.faultNow().Blackhole {
					l.close(true)
				}
			}
			return
		}
	}
}

// write delivers the chunks of q to dst when they are due, in order, until
// the stream's end, or the link dies or is closed. A failed write resets
// the link: the target or client is gone.
func (l *proxyLink) write(q <-chan proxyChunk, dst *net.TCPConn, delivered *atomic.Int64) {
	for {
		var c proxyChunk
		select {
		case c = <-q:
		case <-l.dead:
			return
		case <-l.done:
			return
		}
		if wait := time.Until(c.due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-l.dead:
				t.Stop()
				return
			case <-l.done:
				t.Stop()
				return
			}
		}
		if l.isDead() {
			return
		}
		if len(c.data) > 0 {
			if _, err := dst.Write(c.data); err != nil {
				if !l.isDead() {
					l.close(true)
				}
				return
			}
			delivered.Add(int64(len(c.data)))
		}
		switch {
		case c.reset:
			l.close(true)
			return
		case c.eof:
			dst.CloseWrite()
			return
		}
	}
}

func (l *proxyLink) isDead() bool {
	select {
	case <-l.dead:
		return true
	default:
		return false
	}
}

// blackhole kills the link: from now on nothing is delivered. Writes under
// way are cut short by a write deadline in the past.
func (l *proxyLink) blackhole() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.isDead() {
		return
	}
	close(l.dead)
	past := time.Unix(1, 0)
	l.client.SetWriteDeadline(past)
	if l.server != nil {
		l.server.SetWriteDeadline(past)
	}
}

// close closes both connections, with a reset (SO_LINGER 0) if rst, which
// ends the link's goroutines. Only the first call has an effect.
func (l *proxyLink) close(rst bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.done:
		return
	default:
	}
	close(l.done)
	for _, c := range []*net.TCPConn{l.client, l.server} {
		if c == nil {
			continue
		}
		if rst {
			c.SetLinger(0)
		}
		c.Close()
	}
}
