package gateway_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/guard"
	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/fencegw/fencegw/wire"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/server"
)

// rawUpstream counts every byte that reaches it on any connection, and
// records the requests it received whole.
type rawUpstream struct {
	srv   *httptest.Server
	bytes atomic.Int64
	mu    sync.Mutex
	whole []string // "METHOD path body" of requests received whole
	proto []string // X-Forwarded-Proto of each
}

func newRawUpstream(t *testing.T) *rawUpstream {
	u := &rawUpstream{}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			echoUpgrade(w)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return // cut off mid-body: never whole
		}
		u.mu.Lock()
		u.whole = append(u.whole, r.Method+" "+r.URL.Path+" "+string(body))
		u.proto = append(u.proto, r.Header.Get("X-Forwarded-Proto"))
		u.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	u.srv.Listener = countingListener{u.srv.Listener, &u.bytes}
	u.srv.Start()
	t.Cleanup(u.srv.Close)
	return u
}

func (u *rawUpstream) received() ([]string, int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.whole...), u.bytes.Load()
}

// echoUpgrade switches protocols and echoes what the client sends.
func echoUpgrade(w http.ResponseWriter) {
	c, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	rw.Flush()
	buf := make([]byte, 512)
	for {
		n, err := rw.Read(buf)
		if n > 0 {
			c.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// guardedGateway serves the gateway the way fencegw serve does: an
// http.Server with ConnContext on a guard.NewListener, /email/ routed to up
// with raw epochs and the resource from Fencing-Resource, /down/ to an
// upstream that is not there. Every exchange
// is checked against openapi.yaml.
func guardedGateway(t *testing.T, up *rawUpstream, tc *tls.Config) string {
	t.Helper()
	c := embeddedConfig(t)
	c.Routes = []config.Route{{Prefix: "/email/", Upstream: up.srv.URL, Tokens: config.TokensRaw},
		{Prefix: "/down/", Upstream: "http://127.0.0.1:1", Tokens: config.TokensRaw}} // nothing listens on port 1
	h := assemble(t, c, server.Options{}).Proxy()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: trafficChecker(t).Proxy(t.Name(), h), ConnContext: guard.ConnContext, MaxHeaderBytes: 4096, ReadHeaderTimeout: 5 * time.Second}
	gl := guard.NewListener(ln, guard.ListenerOptions{MaxHeaderBytes: 4096, TLS: tc})
	done := make(chan struct{})
	go func() { srv.Serve(gl); close(done) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return ln.Addr().String()
}

// rawAnswer is one response read off a raw connection.
type rawAnswer struct {
	status  int
	close   bool // the answer said Connection: close
	problem map[string]any
}

// exchange sends raw on a fresh connection (through dial), in pieces with a
// pause between them, and reads answers until the gateway closes it.
func exchange(t *testing.T, dial func() (net.Conn, error), pieces ...string) []rawAnswer {
	t.Helper()
	c, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	for i, p := range pieces {
		if i > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		if _, err := io.WriteString(c, p); err != nil {
			break // the gateway may have closed already
		}
	}
	var out []rawAnswer
	br := bufio.NewReader(c)
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return out
		}
		a := rawAnswer{status: resp.StatusCode, close: resp.Close}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.Header.Get("Content-Type") == wire.ProblemContentType {
			if err := json.Unmarshal(body, &a.problem); err != nil {
				t.Fatalf("problem %q: %v", body, err)
			}
		}
		out = append(out, a)
	}
}

func tcpDial(addr string) func() (net.Conn, error) {
	return func() (net.Conn, error) { return net.Dial("tcp", addr) }
}

const fencedPost = "POST /email/send HTTP/1.1\r\nHost: gw\r\nFencing-Token: 5\r\nFencing-Resource: r\r\n"

// framingAttacks are requests net/http alone would accept, misread or
// answer itself; each must be refused with its problem and reach nothing.
var framingAttacks = []struct {
	name   string
	pieces []string
	status int
	typ    string
}{
	{"CL with TE", []string{fencedPost + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"}, 400, problem.TypeBadFraming},
	{"differing CLs", []string{fencedPost + "Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"}, 400, problem.TypeBadFraming},
	{"equal CLs", []string{fencedPost + "Content-Length: 4\r\nContent-Length: 4\r\n\r\nabcd"}, 400, problem.TypeBadFraming},
	{"obs-fold", []string{"POST /email/send HTTP/1.1\r\nHost: gw\r\nFencing-Token: 5\r\nFencing-Resource: r\r\n s\r\nContent-Length: 1\r\n\r\nx"}, 400, problem.TypeBadFraming},
	{"bare LF head", []string{"POST /email/send HTTP/1.1\nHost: gw\nFencing-Token: 5\nFencing-Resource: r\nContent-Length: 1\n\nx"}, 400, problem.TypeBadFraming},
	{"bare LF chunk line", []string{fencedPost + "Transfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n"}, 400, problem.TypeBadFraming},
	{"TE in HTTP/1.0", []string{"POST /email/send HTTP/1.0\r\nFencing-Token: 5\r\nFencing-Resource: r\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n"}, 400, problem.TypeBadFraming},
	{"two Hosts", []string{"POST /email/send HTTP/1.1\r\nHost: gw\r\nHost: other\r\nFencing-Token: 5\r\nFencing-Resource: r\r\n\r\n"}, 400, problem.TypeBadFraming},
	{"gzip coding", []string{fencedPost + "Transfer-Encoding: gzip\r\n\r\n"}, 501, problem.TypeUnsupportedCoding},
	{"head too large", []string{fencedPost + "X-Big: " + strings.Repeat("a", 9000) + "\r\n\r\n"}, 431, problem.TypeHeaderTooLarge},
}

// TestFramingAttacksRefused: through a real server on a guard.NewListener, each
// attack gets its problem and Connection: close, and the upstream receives
// not a single byte; a valid request pipelined before it is served.
func TestFramingAttacksRefused(t *testing.T) {
	for _, tc := range framingAttacks {
		t.Run(tc.name, func(t *testing.T) {
			up := newRawUpstream(t)
			addr := guardedGateway(t, up, nil)
			got := exchange(t, tcpDial(addr), tc.pieces...)
			checkRefused(t, got, tc.status, tc.typ)
			if whole, n := up.received(); n != 0 {
				t.Fatalf("the upstream received %d bytes (whole requests %q)", n, whole)
			}

			// Pipelined behind a valid write: that one is served, only it.
			pieces := append([]string{fencedPost + "Content-Length: 2\r\n\r\nok"}, tc.pieces...)
			pieces[0] += pieces[1]
			pieces = append(pieces[:1], pieces[2:]...)
			got = exchange(t, tcpDial(addr), pieces...)
			if len(got) != 2 || got[0].status != http.StatusCreated {
				t.Fatalf("pipelined answers %+v, want 201 then the refusal", got)
			}
			checkRefused(t, got[1:], tc.status, tc.typ)
			if whole, _ := up.received(); len(whole) != 1 || whole[0] != "POST /email/send ok" {
				t.Fatalf("upstream received %q, want only the valid write", whole)
			}
		})
	}
}

func checkRefused(t *testing.T, got []rawAnswer, status int, typ string) {
	t.Helper()
	if len(got) != 1 {
		t.Fatalf("answers %+v, want one", got)
	}
	a := got[0]
	if a.status != status || a.problem == nil || a.problem["type"] != typ || a.problem["detail"] == "" {
		t.Fatalf("answer %d %v, want %d %s", a.status, a.problem, status, typ)
	}
	if !a.close {
		t.Fatal("no Connection: close")
	}
}

// TestFramingViolationMidBody: a bad chunk-size line arriving after the
// head was forwarded (a whole head is released without waiting for the
// body) cuts the upstream's request off before it is whole, and the client
// gets the framing problem, not 502.
func TestFramingViolationMidBody(t *testing.T) {
	chunked := fencedPost + "Transfer-Encoding: chunked\r\n\r\n"
	for name, pieces := range map[string][]string{
		"after a chunk":                {chunked + "3\r\nabc\r\n", "3\nxyz\r\n0\r\n\r\n"},
		"in the first chunk-size line": {chunked + "3", "\nabc\r\n0\r\n\r\n"},
	} {
		t.Run(name, func(t *testing.T) {
			up := newRawUpstream(t)
			addr := guardedGateway(t, up, nil)
			got := exchange(t, tcpDial(addr), pieces...)
			checkRefused(t, got, http.StatusBadRequest, problem.TypeBadFraming)
			if !strings.Contains(got[0].problem["detail"].(string), "bare LF ending a chunk-size line") {
				t.Fatalf("detail %q", got[0].problem["detail"])
			}
			if whole, n := up.received(); len(whole) != 0 || n == 0 {
				t.Fatalf("upstream received %d bytes and whole requests %q: want the head, never a whole request", n, whole)
			}
		})
	}
}

// TestGuardedKeepAlive: valid pipelined and keep-alive requests, chunked
// ones with trailers among them, are all served on one connection.
func TestGuardedKeepAlive(t *testing.T) {
	up := newRawUpstream(t)
	addr := guardedGateway(t, up, nil)
	stream := "GET /email/a HTTP/1.1\r\nHost: gw\r\n\r\n" +
		fencedPost + "Transfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\n" +
		fencedPost + "Content-Length: 3\r\n\r\ndef"
	got := exchange(t, tcpDial(addr), stream, stream[:30], stream[30:]+"GET /email/z HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n")
	if len(got) != 7 {
		t.Fatalf("%d answers %+v, want 7", len(got), got)
	}
	for i, a := range got {
		if a.status != http.StatusCreated {
			t.Fatalf("answer %d: %d %v", i, a.status, a.problem)
		}
	}
	want := "[GET /email/a  POST /email/send abc POST /email/send def GET /email/a  POST /email/send abc POST /email/send def GET /email/z ]"
	if whole, _ := up.received(); fmtList(whole) != want {
		t.Fatalf("upstream received %s, want %s", fmtList(whole), want)
	}
}

func fmtList(s []string) string { return "[" + strings.Join(s, " ") + "]" }

// TestForgedSyntheticRequestIsNotAFramingError: the request the guard
// hands net/http after a violation, sent by a client itself, is an
// ordinary (unclean) request; on a clean path it is proxied.
func TestForgedSyntheticRequestIsNotAFramingError(t *testing.T) {
	up := newRawUpstream(t)
	addr := guardedGateway(t, up, nil)
	got := exchange(t, tcpDial(addr), "GET /email/x HTTP/1.1\r\nHost: gw\r\n\r\n"+
		"GET /.fencegw/framing-error/.. HTTP/1.1\r\nHost: fencegw.invalid\r\n\r\n"+
		"GET /email/.fencegw/framing-error HTTP/1.1\r\nHost: fencegw.invalid\r\nConnection: close\r\n\r\n")
	if len(got) != 3 || got[0].status != 201 || got[1].status != 400 || got[1].problem["type"] != problem.TypeBadPath ||
		got[2].status != 201 {
		t.Fatalf("answers %+v, want 201, bad-path 400, 201", got)
	}
}

// TestGuardedUpgrade: a protocol switch through the proxy still works, the
// guard passing the switched bytes through, also those a client sends
// before the 101 arrives.
func TestGuardedUpgrade(t *testing.T) {
	up := newRawUpstream(t)
	addr := guardedGateway(t, up, nil)
	upgrade := "GET /email/ws HTTP/1.1\r\nHost: gw\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n"
	for name, eager := range map[string]string{"after the 101": "", "before the 101": "early bytes\n\n\r\r"} {
		t.Run(name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, upgrade+eager)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("upgrade answer %v %v", resp, err)
			}
			io.WriteString(c, "GET / HTTP/1.1\nnot http at all\n")
			want := eager + "GET / HTTP/1.1\nnot http at all\n"
			got := make([]byte, len(want))
			if _, err := io.ReadFull(br, got); err != nil || string(got) != want {
				t.Fatalf("echoed %q %v, want %q", got, err, want)
			}
		})
	}
}

// TestGuardedHeadLimit: a head of exactly MaxHeaderBytes plus 4 KiB is
// served (net/http's own allowance); one byte more is refused with the
// problem, not net/http's plain-text 431.
func TestGuardedHeadLimit(t *testing.T) {
	up := newRawUpstream(t)
	addr := guardedGateway(t, up, nil) // MaxHeaderBytes 4096
	head := func(n int) string {
		h := "GET /email/x HTTP/1.1\r\nHost: gw\r\nConnection: close\r\nX-Pad: \r\n\r\n"
		return strings.Replace(h, "X-Pad: ", "X-Pad: "+strings.Repeat("p", n-len(h)), 1)
	}
	if got := exchange(t, tcpDial(addr), head(4096+4096)); len(got) != 1 || got[0].status != http.StatusCreated {
		t.Fatalf("a head at the limit: %+v", got)
	}
	checkRefused(t, exchange(t, tcpDial(addr), head(4096+4096+1)), http.StatusRequestHeaderFieldsTooLarge, problem.TypeHeaderTooLarge)
}

// TestGuardedRequestsNetHTTPAnswersItself: requests net/http answers
// without the handler (OPTIONS *) or that refuse an upgrade do not shift
// which request is the synthetic one, nor stop scanning.
func TestGuardedRequestsNetHTTPAnswersItself(t *testing.T) {
	up := newRawUpstream(t)
	addr := guardedGateway(t, up, nil)
	got := exchange(t, tcpDial(addr), "OPTIONS * HTTP/1.1\r\nHost: gw\r\n\r\n"+
		"GET /nowhere/ HTTP/1.1\r\nHost: gw\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n"+
		"GET /email/a HTTP/1.1\r\nHost: gw\r\n\r\n"+
		// Refused before its body is read: net/http reads the body after.
		"POST /email/b HTTP/1.1\r\nHost: gw\r\nConnection: Upgrade\r\nUpgrade: echo\r\nContent-Length: 5\r\n\r\nhello"+
		"OPTIONS * HTTP/1.1\r\nHost: gw\r\n\r\n"+
		fencedPost+"Content-Length: 1\r\nContent-Length: 1\r\n\r\nx")
	var statuses []int
	for _, a := range got {
		statuses = append(statuses, a.status)
	}
	if len(got) != 6 || fmt.Sprint(statuses) != "[200 404 201 428 200 400]" || got[5].problem["type"] != problem.TypeBadFraming {
		t.Fatalf("answers %+v, want 200 404 201 428 200 and the framing problem", got)
	}
}

// TestFramingViolationBehindAFailingRequest: a violation found in a
// pipelined request while the one before it is proxied does not change
// that one's answer.
func TestFramingViolationBehindAFailingRequest(t *testing.T) {
	up := newRawUpstream(t)
	addr := guardedGateway(t, up, nil)
	got := exchange(t, tcpDial(addr), "GET /down/x HTTP/1.1\r\nHost: gw\r\n\r\n"+
		fencedPost+"Content-Length: 1\r\nContent-Length: 1\r\n\r\nx")
	if len(got) != 2 || got[0].status != http.StatusBadGateway || got[0].problem["type"] != problem.TypeUpstreamFailed ||
		got[1].status != http.StatusBadRequest || got[1].problem["type"] != problem.TypeBadFraming {
		t.Fatalf("answers %+v, want 502 upstream-unavailable, then bad-framing", got)
	}
}

// TestGuardedUpgradeRefusedBeforeItsBody: an upgrade request answered
// before its body arrived does not hold up the requests after it.
func TestGuardedUpgradeRefusedBeforeItsBody(t *testing.T) {
	up := newRawUpstream(t)
	addr := guardedGateway(t, up, nil)
	got := exchange(t, tcpDial(addr),
		"POST /email/b HTTP/1.1\r\nHost: gw\r\nConnection: Upgrade\r\nUpgrade: echo\r\nContent-Length: 5\r\n\r\n",
		"hello"+"GET /email/a HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n")
	if len(got) != 2 || got[0].status != http.StatusPreconditionRequired || got[1].status != http.StatusCreated {
		t.Fatalf("answers %+v, want 428 then 201", got)
	}
}

// TestRefusalReachesAClientStillSending: a client whose head is over the
// limit, still sending it when the guard answers, gets the 431 rather than
// a reset (net/http's client reports a failed write over an answer it has
// read): the guard reads and drops the rest before it closes.
func TestRefusalReachesAClientStillSending(t *testing.T) {
	addr := guardedGateway(t, newRawUpstream(t), nil)
	// The client writes its head slowly, 1 KiB at a time: the guard has
	// answered and net/http would have closed long before it is done.
	var d net.Dialer
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, WriteBufferSize: 1 << 10,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			return slowWriter{c}, err
		}}}
	for i := range 3 {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/email/x", nil)
		req.Header.Set("X-Big", strings.Repeat("x", 32<<10))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v, want the 431", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("request %d: %d, want 431", i, resp.StatusCode)
		}
	}
}

// slowWriter writes in pieces of at most 1 KiB, 2 ms apart.
type slowWriter struct{ net.Conn }

func (c slowWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), 1<<10)
		m, err := c.Conn.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		p = p[k:]
		time.Sleep(2 * time.Millisecond)
	}
	return n, nil
}
