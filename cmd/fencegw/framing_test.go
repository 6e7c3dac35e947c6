package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// byteCountingUpstream counts every byte reaching it, and the requests it
// receives whole with their X-Forwarded-Proto.
type byteCountingUpstream struct {
	*httptest.Server
	bytes atomic.Int64
	mu    sync.Mutex
	whole []string
}

func newByteCountingUpstream(t *testing.T) *byteCountingUpstream {
	u := &byteCountingUpstream{}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		u.mu.Lock()
		u.whole = append(u.whole, r.Method+" "+r.URL.Path+" "+string(body)+" "+r.Header.Get("X-Forwarded-Proto"))
		u.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	u.Listener = &countingLn{Listener: u.Listener, n: &u.bytes}
	u.Start()
	t.Cleanup(u.Close)
	return u
}

func (u *byteCountingUpstream) received() ([]string, int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.whole...), u.bytes.Load()
}

type countingLn struct {
	net.Listener
	n *atomic.Int64
}

func (l *countingLn) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingRead{Conn: c, n: l.n}, nil
}

type countingRead struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingRead) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// rawAnswers sends raw over c and returns "status type" for each answer
// until the gateway closes the connection.
func rawAnswers(t *testing.T, c net.Conn, raw string) []string {
	t.Helper()
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, raw)
	var out []string
	br := bufio.NewReader(c)
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return out
		}
		var p struct{ Type string }
		if resp.Header.Get("Content-Type") == "application/problem+json" {
			json.NewDecoder(resp.Body).Decode(&p)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		a := []string{fmt.Sprint(resp.StatusCode)}
		if p.Type != "" {
			a = append(a, p.Type)
		}
		if resp.Close {
			a = append(a, "close")
		}
		out = append(out, strings.Join(a, " "))
	}
}

const rawWrite = "POST /email/send HTTP/1.1\r\nHost: gw\r\nFencing-Token: 5\r\nFencing-Resource: r\r\n"

// framingCases are the issue's attacks, sent raw, and what fencegw answers.
var framingCases = []struct{ name, raw, want string }{
	{"CL with TE", rawWrite + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "400 urn:fencegw:problem:bad-framing close"},
	{"differing CLs", rawWrite + "Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", "400 urn:fencegw:problem:bad-framing close"},
	{"obs-fold", "POST /email/send HTTP/1.1\r\nHost: gw\r\nFencing-Token: 5\r\nFencing-Resource: r\r\n s\r\nContent-Length: 1\r\n\r\nx", "400 urn:fencegw:problem:bad-framing close"},
	{"bare LF head", "POST /email/send HTTP/1.1\nHost: gw\nFencing-Token: 5\nFencing-Resource: r\nContent-Length: 1\n\nx", "400 urn:fencegw:problem:bad-framing close"},
	{"bare LF chunk line", rawWrite + "Transfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n", "400 urn:fencegw:problem:bad-framing close"},
	{"gzip coding", rawWrite + "Transfer-Encoding: gzip\r\n\r\n", "501 urn:fencegw:problem:unsupported-transfer-coding close"},
	{"head over max_header_bytes", rawWrite + "X-Big: " + strings.Repeat("a", 70<<10) + "\r\n\r\n", "431 urn:fencegw:problem:header-too-large close"},
}

// sendFramingCases sends each of framingCases on a connection of its own
// from dial and checks its one answer, then that not one byte reached up.
// Errors name a case followed by how (such as " over TLS").
func sendFramingCases(t *testing.T, up *byteCountingUpstream, how string, dial func() (net.Conn, error)) {
	t.Helper()
	for _, c := range framingCases {
		conn, err := dial()
		if err != nil {
			t.Fatal(err)
		}
		if got := rawAnswers(t, conn, c.raw); len(got) != 1 || got[0] != c.want {
			t.Errorf("%s%s: answers %q, want %q", c.name, how, got, c.want)
		}
	}
	if whole, n := up.received(); n != 0 {
		t.Fatalf("the upstream received %d bytes (whole requests %q)", n, whole)
	}
}

// TestFramingAttacksThroughTheBinary sends each attack to the real binary
// over a socket: a problem, and not one byte reaches the upstream; valid
// pipelined writes still work.
func TestFramingAttacksThroughTheBinary(t *testing.T) {
	up := newByteCountingUpstream(t)
	p := start(t, "--store", filepath.Join(t.TempDir(), "s.db"), "--route", "/email/="+up.URL)
	addr := strings.TrimPrefix(p.proxy, "http://")
	sendFramingCases(t, up, "", func() (net.Conn, error) { return net.Dial("tcp", addr) })
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	got := rawAnswers(t, conn, rawWrite+"Content-Length: 1\r\n\r\na"+rawWrite+"Transfer-Encoding: chunked\r\n\r\n1\r\nb\r\n0\r\n\r\n"+
		rawWrite+"Content-Length: 1\r\nConnection: close\r\n\r\nc")
	if strings.Join(got, ",") != "204,204,204 close" {
		t.Fatalf("pipelined writes: %q", got)
	}
	if whole, _ := up.received(); strings.Join(whole, ",") != "POST /email/send a http,POST /email/send b http,POST /email/send c http" {
		t.Fatalf("upstream received %q", whole)
	}
}

// TestFramingViolationMidBodyThroughTheBinary: a bad chunk-size line after
// the head was forwarded gets the framing problem, not 502, and the
// upstream never receives the request whole.
func TestFramingViolationMidBodyThroughTheBinary(t *testing.T) {
	up := newByteCountingUpstream(t)
	p := start(t, "--store", filepath.Join(t.TempDir(), "s.db"), "--route", "/email/="+up.URL)
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.proxy, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(conn, rawWrite+"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")
	time.Sleep(300 * time.Millisecond) // the head and the first chunk are forwarded
	if got := rawAnswers(t, conn, "3\nxyz\r\n0\r\n\r\n"); strings.Join(got, ",") != "400 urn:fencegw:problem:bad-framing close" {
		t.Fatalf("answers %q", got)
	}
	if whole, n := up.received(); len(whole) != 0 || n == 0 {
		t.Fatalf("upstream received %d bytes, whole requests %q: want the head only", n, whole)
	}
}

// TestFramingAttacksOverTLS: with the proxy on TLS, HTTP/1.1 attacks are
// refused the same way, HTTP/1.1 writes reach the upstream as https, and
// HTTP/2 still works.
func TestFramingAttacksOverTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	cert, key := ca.issue(t, "gateway.test")
	up := newByteCountingUpstream(t)
	cfg := writeFile(t, dir, "gw.yaml", []byte(fmt.Sprintf("store: %q\ntls:\n  cert_file: %q\n  key_file: %q\nroutes:\n"+
		"  - prefix: /email/\n    upstream: %q\n    tokens: raw\n", filepath.Join(dir, "s.db"),
		writeFile(t, dir, "gw.crt", cert), writeFile(t, dir, "gw.key", key), up.URL)))
	p := start(t, "--config", cfg)
	addr := strings.TrimPrefix(p.proxy, "http://")
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.pem)
	sendFramingCases(t, up, " over TLS", func() (net.Conn, error) {
		return tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "gateway.test", NextProtos: []string{"http/1.1"}})
	})
	for _, h2 := range []bool{false, true} {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "gateway.test"}, ForceAttemptHTTP2: h2}
		if !h2 {
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		}
		req, _ := http.NewRequest("POST", "https://"+addr+"/email/send", strings.NewReader("x"))
		req.Header.Set("Fencing-Token", "5")
		req.Header.Set("Fencing-Resource", "r")
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("HTTP/2 %v: %v", h2, err)
		}
		resp.Body.Close()
		tr.CloseIdleConnections()
		if resp.StatusCode != http.StatusNoContent || (resp.ProtoMajor == 2) != h2 {
			t.Fatalf("HTTP/2 %v: %d over %s", h2, resp.StatusCode, resp.Proto)
		}
	}
	if whole, _ := up.received(); strings.Join(whole, ",") != "POST /email/send x https,POST /email/send x https" {
		t.Fatalf("upstream received %q", whole)
	}
}
