package upstream_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/upstream"
)

// rawUpstreamServer answers each connection with answer, which sees the
// request head as read and the connection.
type rawUpstreamServer struct {
	ln      net.Listener
	conns   atomic.Int64
	wg      sync.WaitGroup
	mu      sync.Mutex
	heads   []string
	handler func(c net.Conn, br *bufio.Reader, head string) bool // false: close the connection
}

func newRawUpstreamServer(t *testing.T, handler func(c net.Conn, br *bufio.Reader, head string) bool) *rawUpstreamServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawUpstreamServer{ln: ln, handler: handler}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					head, err := readHead(br)
					if err != nil {
						return
					}
					s.mu.Lock()
					s.heads = append(s.heads, head)
					s.mu.Unlock()
					if !s.handler(c, br, head) {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *rawUpstreamServer) url() string { return "http://" + s.ln.Addr().String() }

// readHead reads a request head up to its blank line, and a body of the
// Content-Length it declares.
func readHead(br *bufio.Reader) (string, error) {
	var b strings.Builder
	n := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		b.WriteString(line)
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && strings.EqualFold(k, "Content-Length") {
			fmt.Sscan(strings.TrimSpace(v), &n)
		}
		if line == "\r\n" {
			break
		}
	}
	if _, err := io.CopyN(io.Discard, br, int64(n)); err != nil {
		return "", err
	}
	return b.String(), nil
}

func roundTrip(t *testing.T, tr http.RoundTripper, method, url, body string) (*http.Response, string, error) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b), err
}

// TestTransportReusesConnections: answers framed by length, by chunks or
// with no body leave the connection for the next exchange; a close, an
// answer with nothing to frame it (read to EOF), or bytes after the answer
// do not.
func TestTransportReusesConnections(t *testing.T) {
	answers := map[string]string{
		"/length":  "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"/chunked": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
		"/empty":   "HTTP/1.1 204 No Content\r\n\r\n",
		"/close":   "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
		"/eof":     "HTTP/1.1 200 OK\r\n\r\nhello",
		"/extra":   "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\n",
		"/interim": "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
	}
	up := newRawUpstreamServer(t, func(c net.Conn, _ *bufio.Reader, head string) bool {
		path := strings.Fields(head)[1]
		io.WriteString(c, answers[path])
		return path != "/close" && path != "/eof"
	})
	tr := upstream.NewTransport(upstream.TransportOptions{})
	t.Cleanup(tr.CloseIdleConnections)
	for _, tc := range []struct {
		path      string
		body      string
		reuseNext bool
	}{
		{"/length", "hello", true},
		{"/chunked", "hello", true},
		{"/empty", "", true},
		{"/interim", "hello", true},
		{"/close", "hello", false},
		{"/eof", "hello", false},
		{"/extra", "hello", false},
	} {
		before := up.conns.Load()
		resp, body, err := roundTrip(t, tr, http.MethodPost, up.url()+tc.path, "payload")
		if err != nil || body != tc.body {
			t.Fatalf("%s: %v %q, want %q", tc.path, err, body, tc.body)
		}
		if tc.path == "/chunked" && resp.Trailer.Get("X-T") != "1" {
			t.Errorf("%s: trailer %v", tc.path, resp.Trailer)
		}
		if _, _, err := roundTrip(t, tr, http.MethodGet, up.url()+"/length", ""); err != nil {
			t.Fatal(err)
		}
		dialled := up.conns.Load() - before
		if reused := dialled == 0 || (dialled == 1 && before == 0); reused != tc.reuseNext {
			t.Errorf("after %s: %d new connections, want reuse %v", tc.path, dialled, tc.reuseNext)
		}
	}
}

// TestTransportIdleCloseByUpstream: a connection the upstream closed while
// it sat idle is not used again. A replayable request that still meets
// such a connection is sent again on a new one; a write with a body is
// never sent twice.
func TestTransportIdleCloseByUpstream(t *testing.T) {
	var served atomic.Int64
	up := newRawUpstreamServer(t, func(c net.Conn, _ *bufio.Reader, head string) bool {
		served.Add(1)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		return false // close after every answer, without saying so
	})
	tr := upstream.NewTransport(upstream.TransportOptions{})
	t.Cleanup(tr.CloseIdleConnections)
	for i := range 3 {
		if _, body, err := roundTrip(t, tr, http.MethodGet, up.url()+"/", ""); err != nil || body != "ok" {
			t.Fatalf("GET %d: %v %q", i, err, body)
		}
	}
	// Without time to notice the close, a POST meets a dead connection:
	// it fails rather than risk a second delivery.
	served.Store(0)
	_, _, err1 := roundTrip(t, tr, http.MethodPost, up.url()+"/", "write")
	_, _, err2 := roundTrip(t, tr, http.MethodPost, up.url()+"/", "write")
	if served.Load() > 2 {
		t.Fatalf("%d writes reached the upstream for 2 sent", served.Load())
	}
	t.Logf("POSTs after idle closes: %v, %v", err1, err2)
	// Once idle for a while, the close is seen before use.
	if _, _, err := roundTrip(t, tr, http.MethodGet, up.url()+"/", ""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if _, body, err := roundTrip(t, tr, http.MethodPost, up.url()+"/", "write"); err != nil || body != "ok" {
		t.Fatalf("POST after an idle close was seen: %v %q", err, body)
	}
}

// TestTransportAborts: the request's context ends the exchange at once,
// whether it waits for the head or reads the body; the connection is not
// reused. The response-head timeout is a timeout error.
func TestTransportAborts(t *testing.T) {
	release := make(chan struct{})
	up := newRawUpstreamServer(t, func(c net.Conn, _ *bufio.Reader, head string) bool {
		switch strings.Fields(head)[1] {
		case "/hang":
			<-release
		case "/slowbody":
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello")
			<-release
		}
		return false
	})
	t.Cleanup(func() { close(release) })
	tr := upstream.NewTransport(upstream.TransportOptions{ResponseHeaderTimeout: 100 * time.Millisecond})
	t.Cleanup(tr.CloseIdleConnections)
	_, _, err := roundTrip(t, tr, http.MethodGet, up.url()+"/hang", "")
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("head timeout: %v, want a timeout error", err)
	}

	tr2 := upstream.NewTransport(upstream.TransportOptions{})
	t.Cleanup(tr2.CloseIdleConnections)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, up.url()+"/slowbody", nil)
	resp, err := tr2.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(50*time.Millisecond, cancel)
	if b, err := io.ReadAll(resp.Body); err == nil {
		t.Fatalf("body read to %q despite the cancel", b)
	}
	resp.Body.Close()

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, up.url()+"/hang", nil)
	if _, err := tr2.RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled while waiting for the head: %v, want context.Canceled", err)
	}
}

// TestTransportClosedEarly: a body closed before its end takes its
// connection with it; the next exchange dials anew and is answered.
func TestTransportClosedEarly(t *testing.T) {
	up := newRawUpstreamServer(t, func(c net.Conn, _ *bufio.Reader, head string) bool {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789")
		return true
	})
	tr := upstream.NewTransport(upstream.TransportOptions{})
	t.Cleanup(tr.CloseIdleConnections)
	req, _ := http.NewRequest(http.MethodGet, up.url()+"/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	io.ReadFull(resp.Body, buf)
	resp.Body.Close()
	if _, body, err := roundTrip(t, tr, http.MethodGet, up.url()+"/", ""); err != nil || body != "0123456789" {
		t.Fatalf("after an early close: %v %q", err, body)
	}
	if n := up.conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2 (the early-closed one is not reused)", n)
	}
}

// TestTransportWritesWhatItWasGiven: the request reaches the upstream with
// its method, path, headers and body as given, and no header of the
// transport's own (no Accept-Encoding it did not receive).
func TestTransportWritesWhatItWasGiven(t *testing.T) {
	heads := make(chan string, 1)
	up := newRawUpstreamServer(t, func(c net.Conn, _ *bufio.Reader, head string) bool {
		heads <- head
		io.WriteString(c, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
		return true
	})
	tr := upstream.NewTransport(upstream.TransportOptions{})
	t.Cleanup(tr.CloseIdleConnections)
	req, _ := http.NewRequest(http.MethodPut, up.url()+"/a/b?c=d", strings.NewReader("body!"))
	req.Header.Set("X-Test", "1")
	req.Header.Set("User-Agent", "")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	head := <-heads
	for _, want := range []string{"PUT /a/b?c=d HTTP/1.1\r\n", "Host: " + up.ln.Addr().String() + "\r\n", "X-Test: 1\r\n", "Content-Length: 5\r\n"} {
		if !strings.Contains(head, want) {
			t.Errorf("head %q lacks %q", head, want)
		}
	}
	if strings.Contains(strings.ToLower(head), "accept-encoding") || strings.Contains(head, "User-Agent") {
		t.Errorf("head %q has a header of the transport's own", head)
	}
}
