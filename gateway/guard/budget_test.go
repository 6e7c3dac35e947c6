package guard_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/guard"
	"github.com/fencegw/fencegw/gateway/upstream"
)

// budgetServer serves h under gateway.Budget(o) on a real listener.
func budgetServer(t *testing.T, o guard.BudgetOptions, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(guard.Budget(o)(h))
	t.Cleanup(srv.Close)
	return srv
}

// trickleBody sends the head of a request declaring n bytes of body to srv,
// then a byte of it every interval until the connection fails or stop
// closes. The connection is returned for reading.
func trickleBody(t *testing.T, srv *httptest.Server, n int, interval time.Duration, stop <-chan struct{}) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", n)
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write([]byte{'x'}); err != nil {
					return
				}
			}
		}
	}()
	return c
}

// TestBudgetNeverExtendsAHandlersReadDeadline: a handler that sets a read
// deadline earlier than the body's (as delivery before a lease's lapse
// does) has its body read cut at its own deadline, not at the body's.
func TestBudgetNeverExtendsAHandlersReadDeadline(t *testing.T) {
	readErr := make(chan error, 1)
	srv := budgetServer(t, guard.BudgetOptions{BodyTimeout: time.Hour, WriteTimeout: time.Hour},
		func(w http.ResponseWriter, r *http.Request) {
			if err := http.NewResponseController(w).SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
				readErr <- err
				return
			}
			_, err := io.ReadAll(r.Body)
			readErr <- err
			w.WriteHeader(http.StatusRequestTimeout)
		})
	stop := make(chan struct{})
	defer close(stop)
	trickleBody(t, srv, 1000, 20*time.Millisecond, stop)
	var ne net.Error
	if err := <-readErr; !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("reading a trickled body past the handler's own read deadline: %v, want a timeout", err)
	}
}

// TestBudgetLeavesNoDeadlineOnceTheBodyIsRead: once the body was read
// whole, neither the body's deadline nor the write deadline passing ends
// the request: a handler that waits (on an upstream, say) longer than
// both still answers, its context alive.
func TestBudgetLeavesNoDeadlineOnceTheBodyIsRead(t *testing.T) {
	o := guard.BudgetOptions{BodyTimeout: 50 * time.Millisecond, WriteTimeout: 50 * time.Millisecond}
	srv := budgetServer(t, o, func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		time.Sleep(4 * (o.BodyTimeout + o.WriteTimeout))
		if err := r.Context().Err(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Write(b)
	})
	resp, err := http.Post(srv.URL, "text/plain", strings.NewReader("whole body"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(b) != "whole body" {
		t.Fatalf("answer after waiting past the budgets = %d %q, want 200 %q", resp.StatusCode, b, "whole body")
	}
}

// TestBudgetLetsAnswersFlow: an answer streamed for longer than
// write_timeout, with pauses longer than it between writes, reaches a
// client that reads it.
func TestBudgetLetsAnswersFlow(t *testing.T) {
	o := guard.BudgetOptions{BodyTimeout: time.Second, WriteTimeout: 50 * time.Millisecond}
	srv := budgetServer(t, o, func(w http.ResponseWriter, r *http.Request) {
		for i := range 5 {
			fmt.Fprintf(w, "event %d\n", i)
			http.NewResponseController(w).Flush()
			time.Sleep(2 * o.WriteTimeout)
		}
	})
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || strings.Count(string(b), "event") != 5 {
		t.Fatalf("streamed answer = %q, %v; want 5 events", b, err)
	}
}

// TestBudgetCutsAClientThatStopsReading: an answer to a client that reads
// nothing of it fails to write once write_timeout passes without progress.
func TestBudgetCutsAClientThatStopsReading(t *testing.T) {
	writeErr := make(chan error, 1)
	srv := budgetServer(t, guard.BudgetOptions{BodyTimeout: time.Second, WriteTimeout: 50 * time.Millisecond},
		func(w http.ResponseWriter, r *http.Request) {
			chunk := make([]byte, 64<<10)
			for range 1 << 14 { // 1 GiB: far more than the socket buffers hold
				if _, err := w.Write(chunk); err != nil {
					writeErr <- err
					return
				}
			}
			writeErr <- nil
		})
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if err := <-writeErr; err == nil {
		t.Fatal("1 GiB written to a client that reads nothing; want the write cut")
	}
}

// TestBudgetHandsAHijackedConnectionOverWithoutDeadlines: after a hijack
// (a protocol switch), the deadlines Budget set are gone: the connection
// outlives write_timeout and body_timeout.
func TestBudgetHandsAHijackedConnectionOverWithoutDeadlines(t *testing.T) {
	o := guard.BudgetOptions{BodyTimeout: 50 * time.Millisecond, WriteTimeout: 50 * time.Millisecond}
	srv := budgetServer(t, o, func(w http.ResponseWriter, r *http.Request) {
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		rw.Flush()
		time.Sleep(4 * (o.BodyTimeout + o.WriteTimeout))
		line, err := rw.ReadString('\n')
		if err == nil {
			_, err = rw.WriteString("echo " + line)
		}
		if err == nil {
			err = rw.Flush()
		}
		if err != nil {
			t.Errorf("upgraded connection after the budgets passed: %v", err)
		}
	})
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\nContent-Length: 0\r\n\r\n")
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	io.WriteString(c, "hello\n")
	if line, err := r.ReadString('\n'); err != nil || line != "echo hello\n" {
		t.Fatalf("echo over the upgraded connection = %q, %v", line, err)
	}
}

// TestBudgetGrowsWithAChunkedBody: a body of unknown length that keeps
// arriving at min_body_rate or faster may take longer than body_timeout.
func TestBudgetGrowsWithAChunkedBody(t *testing.T) {
	o := guard.BudgetOptions{BodyTimeout: 100 * time.Millisecond, MinBodyRate: 100, WriteTimeout: time.Second}
	srv := budgetServer(t, o, func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "%d", len(b))
	})
	pr, pw := io.Pipe()
	go func() {
		// 100 bytes, one more second of budget, every 50ms: 8 times
		// body_timeout in all.
		for range 16 {
			if _, err := pw.Write([]byte(strings.Repeat("x", 100))); err != nil {
				return
			}
			time.Sleep(o.BodyTimeout / 2)
		}
		pw.Close()
	}()
	resp, err := http.Post(srv.URL, "text/plain", pr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(b) != "1600" {
		t.Fatalf("chunked body at the minimum rate = %d %q, want 200 \"1600\"", resp.StatusCode, b)
	}
}

// TestBudgetHandlerReadDeadlineEndsWithTheBody: a handler's read deadline
// (the exchange's, or a lease's lapse) bounds the body only. Once the body
// was read whole, the server's background read watches for the client
// going away, and a deadline left on the connection would cancel the
// request as if the client had gone (the proxy then answered 499 to a
// client still waiting, for a write the upstream had received). It must
// not: the request's context stays alive past that deadline, with or
// without a body.
func TestBudgetHandlerReadDeadlineEndsWithTheBody(t *testing.T) {
	const deadline = 100 * time.Millisecond
	srv := budgetServer(t, guard.BudgetOptions{BodyTimeout: time.Hour, WriteTimeout: time.Hour},
		func(w http.ResponseWriter, r *http.Request) {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(deadline))
			if _, err := io.Copy(io.Discard, r.Body); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			select {
			case <-r.Context().Done():
				w.WriteHeader(upstream.StatusClientClosedRequest)
			case <-time.After(5 * deadline):
				w.WriteHeader(http.StatusNoContent)
			}
		})
	for _, body := range []string{"", "a small body"} {
		resp, err := http.Post(srv.URL, "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Errorf("body %q: status %d, want 204: the request was cancelled at the handler's read deadline after its body was read",
				body, resp.StatusCode)
		}
	}
}
