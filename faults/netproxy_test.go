package faults

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The proxy tests run real TCP through a Proxy to loopback servers. They
// assert lower bounds on timing only: a slow machine may deliver late, never
// early.

// pxNoLeaks fails t if goroutines started during t outlive its cleanups.
// Call it first, so that its cleanup runs last.
func pxNoLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		if err := goleak.Find(opt); err != nil {
			t.Error(err)
		}
	})
}

// pxServer serves handle on a loopback port until t ends, then closes
// the listener and every connection and waits for the handlers.
func pxServer(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Go(func() {
				handle(c)
				c.Close()
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// pxEcho sends back what it reads until EOF; the server then closes.
func pxEcho(c net.Conn) { io.Copy(c, c) }

// pxGreet writes name, then echoes.
func pxGreet(name string) func(net.Conn) {
	return func(c net.Conn) {
		if _, err := io.WriteString(c, name); err == nil {
			pxEcho(c)
		}
	}
}

func pxStart(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := NewProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func pxDial(t *testing.T, p *Proxy) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// pxReadN reads exactly n bytes within 10 seconds.
func pxReadN(t *testing.T, c net.Conn, n int) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read %d bytes: %v (got %q)", n, err, b)
	}
	return string(b)
}

func pxRoundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatalf("write: %v", err)
	}
	if got := pxReadN(t, c, len(msg)); got != msg {
		t.Fatalf("pxEcho = %q, want %q", got, msg)
	}
}

// pxSilent asserts that nothing, not even a close, arrives on c for d.
func pxSilent(t *testing.T, c net.Conn, d time.Duration) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	n, err := c.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read on a blackholed connection = %d bytes, %v; want a timeout", n, err)
	}
}

// closed asserts that c is closed (EOF) or reset promptly.
func pxClosed(t *testing.T, c net.Conn, wantReset bool) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.ReadAll(c)
	switch {
	case errors.Is(err, syscall.ECONNRESET):
	case err == nil && !wantReset: // EOF
	default:
		t.Fatalf("read = %v; want %s", err, map[bool]string{true: "ECONNRESET", false: "EOF or ECONNRESET"}[wantReset])
	}
}

func TestProxyPassThrough(t *testing.T) {
	pxNoLeaks(t)
	p := pxStart(t, pxServer(t, pxEcho))
	c := pxDial(t, p)
	data := make([]byte, 1<<20)
	rand.Read(data)
	written := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		if err == nil {
			err = c.CloseWrite()
		}
		written <- err
	}()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("echoed %d bytes (equal: %v), %v; want the %d sent", len(got), bytes.Equal(got, data), err, len(data))
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	want := Stats{Accepted: 1, Forwarded: 1, ToTarget: 1 << 20, ToClient: 1 << 20}
	if s := p.Stats(); s != want {
		t.Fatalf("Stats() = %+v, want %+v", s, want)
	}
}

func TestProxyLatency(t *testing.T) {
	pxNoLeaks(t)
	const latency = 100 * time.Millisecond
	p := pxStart(t, pxServer(t, pxEcho))
	c := pxDial(t, p)
	pxRoundTrip(t, c, "warm")

	p.Set(Fault{Latency: latency})
	start := time.Now()
	pxRoundTrip(t, c, "ping")
	if rtt := time.Since(start); rtt < 2*latency {
		t.Fatalf("round trip took %v with %v latency each way", rtt, latency)
	}

	// Bytes already delayed are not overtaken by bytes sent after the
	// latency drops.
	p.Set(Fault{Latency: 3 * latency})
	start = time.Now()
	io.WriteString(c, "first,")
	time.Sleep(10 * time.Millisecond)
	p.Set(Fault{})
	io.WriteString(c, "second")
	if got := pxReadN(t, c, len("first,second")); got != "first,second" {
		t.Fatalf("pxEcho = %q: reordered", got)
	}
	if d := time.Since(start); d < 3*latency {
		t.Fatalf("pxEcho after %v, before the %v latency in force when it was sent", d, 3*latency)
	}

	// Healed, new connections do not wait.
	pxRoundTrip(t, pxDial(t, p), "new")
}

func TestProxyBlackhole(t *testing.T) {
	pxNoLeaks(t)
	ended := make(chan struct{}, 10) // a server connection ended
	p := pxStart(t, pxServer(t, func(c net.Conn) { pxEcho(c); ended <- struct{}{} }))
	old, gone := pxDial(t, p), pxDial(t, p)
	pxRoundTrip(t, old, "before")
	pxRoundTrip(t, gone, "before")

	p.Set(Fault{Blackhole: true})
	io.WriteString(old, "lost")
	pxSilent(t, old, 300*time.Millisecond)
	gone.Close()
	during := pxDial(t, p)
	io.WriteString(during, "lost too")
	pxSilent(t, during, 300*time.Millisecond)
	select {
	case <-ended:
		t.Fatal("a close crossed the blackhole")
	default:
	}
	s := p.Stats()
	if s.ToTarget != 2*int64(len("before")) || s.ToClient != 2*int64(len("before")) || s.Forwarded != 2 || s.Accepted != 3 {
		t.Fatalf("Stats() = %+v: traffic reached the target during the blackhole", s)
	}
	if s.Dropped < int64(len("lost")+len("lost too")) {
		t.Fatalf("Stats() = %+v: want the blackholed bytes counted as dropped", s)
	}

	p.Set(Fault{})
	pxRoundTrip(t, pxDial(t, p), "healed")
	// The client that closed during the blackhole has its server
	// connection reset once the blackhole is lifted.
	pxEnded(t, ended)
	// The connection that lived through the blackhole stays dead: what it
	// sent then is not delivered late, nor is anything after.
	io.WriteString(old, "after")
	pxSilent(t, old, 300*time.Millisecond)
	// But its close now reaches the server.
	old.Close()
	pxEnded(t, ended)
}

// pxEnded waits for a server connection to end.
func pxEnded(t *testing.T, ended <-chan struct{}) {
	t.Helper()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the server connection of a closed dead connection was not reset")
	}
}

func TestProxyReset(t *testing.T) {
	pxNoLeaks(t)
	p := pxStart(t, pxServer(t, pxEcho))
	a, b := pxDial(t, p), pxDial(t, p)
	pxRoundTrip(t, a, "a")
	pxRoundTrip(t, b, "b")
	p.Set(Fault{Latency: time.Hour}) // reset does not wait for delayed bytes
	io.WriteString(b, "stuck")

	p.Set(Fault{Reset: true})
	pxClosed(t, a, true)
	pxClosed(t, b, true)
	// A new connection is accepted, then reset at once.
	if c, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second); err == nil {
		pxClosed(t, c, true)
		c.Close()
	} else if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("dial during a reset: %v", err)
	}

	p.Set(Fault{})
	pxRoundTrip(t, pxDial(t, p), "healed")
}

func TestProxySlowClose(t *testing.T) {
	pxNoLeaks(t)
	const slow = 150 * time.Millisecond
	p := pxStart(t, pxServer(t, pxEcho))
	p.Set(Fault{SlowClose: slow})
	c := pxDial(t, p)
	pxRoundTrip(t, c, "open")
	io.WriteString(c, "last words")
	start := time.Now()
	c.CloseWrite()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "last words" {
		t.Fatalf("after CloseWrite read %q, %v; want the last words, then EOF", got, err)
	}
	// Our close reaches the server late, and so does the server's close.
	if d := time.Since(start); d < 2*slow {
		t.Fatalf("EOF after %v; want at least twice %v", d, slow)
	}
}

func TestProxySetTarget(t *testing.T) {
	pxNoLeaks(t)
	p := pxStart(t, pxServer(t, pxGreet("A")))
	a := pxDial(t, p)
	if got := pxReadN(t, a, 1); got != "A" {
		t.Fatalf("greeting %q, want A", got)
	}
	p.SetTarget(pxServer(t, pxGreet("B")))
	b := pxDial(t, p)
	if got := pxReadN(t, b, 1); got != "B" {
		t.Fatalf("greeting %q after SetTarget, want B", got)
	}
	pxRoundTrip(t, a, "still A") // existing connections keep their target
}

func TestProxyClose(t *testing.T) {
	pxNoLeaks(t)
	p := pxStart(t, pxServer(t, pxEcho))
	plain := pxDial(t, p)
	pxRoundTrip(t, plain, "x")
	p.Set(Fault{Latency: time.Hour})
	delayed := pxDial(t, p)
	io.WriteString(delayed, "in flight")
	p.Set(Fault{Blackhole: true})
	holed := pxDial(t, p)
	io.WriteString(holed, "swallowed")

	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, c := range []net.Conn{plain, delayed, holed} {
		pxClosed(t, c, false)
	}
	if c, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatal("the proxy still accepts after Close")
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
