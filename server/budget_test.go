package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/internal/testutil/testtls"
	"github.com/fencegw/fencegw/telemetry"
)

// budgetGateway is a Server serving on real loopback listeners.
type budgetGateway struct {
	proxy, control string // host:port
	stop           func()
}

// serveBudgetGateway builds a gateway from c (addresses set to free loopback
// ports) and serves it until the test ends.
func serveBudgetGateway(t *testing.T, c config.Config) *budgetGateway {
	t.Helper()
	return serveBudgetGatewayWith(t, c, Options{})
}

// serveBudgetGatewayWith is serveBudgetGateway with options (its logger and telemetry
// replaced).
func serveBudgetGatewayWith(t *testing.T, c config.Config, o Options) *budgetGateway {
	t.Helper()
	c.Listen, c.APIListen = budgetAddr(t), budgetAddr(t)
	c.Store = filepath.Join(t.TempDir(), "fencegw.db")
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	tel, err := telemetry.Setup(context.Background(), telemetry.Options{IgnoreEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	o.Logger, o.Telemetry = slog.New(slog.DiscardHandler), tel
	s, err := New(context.Background(), c, o)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := Listen(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &budgetGateway{}
	ready, served := make(chan struct{}), make(chan error, 1)
	go func() {
		served <- s.Serve(ctx, ls, func(p, a net.Addr) { g.proxy, g.control = p.String(), a.String(); close(ready) })
	}()
	select {
	case <-ready:
	case err := <-served:
		t.Fatalf("Serve: %v", err)
	}
	var once sync.Once
	g.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-served; err != nil {
				t.Errorf("Serve: %v", err)
			}
			s.Close()
			tel.Shutdown(context.Background())
		})
	}
	t.Cleanup(g.stop)
	return g
}

// metric returns the value of the Prometheus sample name{labels} on the
// gateway's /metrics, or -1 when there is none.
func (g *budgetGateway) metric(t *testing.T, name, labels string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + g.control + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\{([^}]*)\} (\S+)$`)
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		if strings.Contains(m[1], labels) {
			v, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	return -1
}

// slowTarget is where slowBody sends its request.
type slowTarget struct {
	dial         func() (net.Conn, error)
	method, path string
}

// slowBody opens a connection with tg.dial, sends the head of a request
// that declares a 60,000-byte body, then one byte of it every interval,
// with no credentials. It returns when the gateway closes the connection
// (or giveUp closes), with the answer if one arrived (its body read).
func slowBody(tg slowTarget, interval time.Duration, giveUp <-chan struct{}) (*http.Response, error) {
	c, err := tg.dial()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: slow.example\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n", tg.method, tg.path)
	if _, err := io.WriteString(c, head); err != nil {
		return nil, err
	}
	closed := make(chan struct{})
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-closed:
				return
			case <-giveUp:
				c.Close()
				return
			case <-t.C:
				if _, err := c.Write([]byte{'x'}); err != nil {
					return
				}
			}
		}
	}()
	defer close(closed)
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	} else {
		resp = nil
	}
	io.Copy(io.Discard, r)
	select {
	case <-giveUp:
		return resp, errors.New("still open when the test gave up")
	default:
	}
	return resp, nil
}

// budgetConfig is a gateway with short budgets, routing /w/ (raw epochs)
// to upstream.
func budgetConfig(upstream string) config.Config {
	c := config.Default()
	c.BodyTimeout = config.Duration(time.Second)
	c.MinBodyRate = 1 << 20
	c.WriteTimeout = config.Duration(2 * time.Second)
	c.Routes = []config.Route{{Prefix: "/w/", Upstream: upstream, Tokens: config.TokensRaw}}
	return c
}

// TestSlowBodiesAreCutOnBothListeners: hundreds of connections that
// declare a body and trickle it, with no credentials, are answered with
// Connection: close and closed within body_timeout + content length /
// min_body_rate on the proxy (428 without a token, 404 off every route) and
// on the control API (a handler reading the body, a 404 not reading it),
// while writes issued meanwhile succeed.
func TestSlowBodiesAreCutOnBothListeners(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer upstream.Close()
	c := budgetConfig(upstream.URL)
	g := serveBudgetGateway(t, c)

	const perListener = 150
	// The documented budget, and generous slack for a loaded machine.
	budget := c.BodyTimeout.D() + 60000*time.Second/time.Duration(c.MinBodyRate)
	dial := func(addr string) func() (net.Conn, error) {
		return func() (net.Conn, error) { return net.Dial("tcp", addr) }
	}
	done := cutSlowBodies(t, 2*perListener, budget, []slowTarget{
		{dial(g.proxy), http.MethodPost, "/w/slow"},                   // 428: no Fencing-Token
		{dial(g.proxy), http.MethodPost, "/not-routed"},               // 404
		{dial(g.control), http.MethodPost, "/v1/leases/slow/acquire"}, // reads the body
		{dial(g.control), http.MethodPost, "/not-an-endpoint"},        // 404
	})
	// Writes issued meanwhile succeed.
	client := &http.Client{Timeout: 30 * time.Second}
	for i := range 20 {
		req, _ := http.NewRequest(http.MethodPost, "http://"+g.proxy+"/w/ok", strings.NewReader(`{"n":`+strconv.Itoa(i)+`}`))
		req.Header.Set("Fencing-Token", "1")
		req.Header.Set("Fencing-Resource", "budget-test")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("write %d during the slow bodies: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("write %d during the slow bodies = %d, want 204", i, resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
	client.CloseIdleConnections()
	done()
}

// cutSlowBodies starts n slowBody connections, spread over targets, and
// returns a function that waits for them and fails the test for each one
// not answered with Connection: close and closed within budget + 20s.
func cutSlowBodies(t *testing.T, n int, budget time.Duration, targets []slowTarget) (wait func()) {
	t.Helper()
	giveUp := make(chan struct{})
	timer := time.AfterFunc(budget+20*time.Second, func() { close(giveUp) })
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		tg := targets[i%len(targets)]
		wg.Go(func() {
			resp, err := slowBody(tg, 300*time.Millisecond, giveUp)
			switch {
			case err != nil:
				errs <- fmt.Errorf("%s %s: %w", tg.method, tg.path, err)
			case resp == nil:
				errs <- fmt.Errorf("%s %s: closed without an answer", tg.method, tg.path)
			case !resp.Close:
				errs <- fmt.Errorf("%s %s: %s without Connection: close", tg.method, tg.path, resp.Status)
			}
		})
	}
	return func() {
		t.Helper()
		wg.Wait()
		timer.Stop()
		close(errs)
		failed := 0
		for err := range errs {
			if failed++; failed <= 5 {
				t.Error(err)
			}
		}
		if failed > 0 {
			t.Errorf("%d of %d slow-body connections were not answered and closed within the body budget (%s) + 20s", failed, n, budget)
		}
	}
}

// TestConnectionCapRefusesAndCounts: a listener holds at most
// max_connections open; the next is closed without an answer, counted in
// fencegw.connections.refused, and fencegw.connections.open shows the
// connections held. Once they close, connections are served again.
func TestConnectionCapRefusesAndCounts(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer upstream.Close()
	c := budgetConfig(upstream.URL)
	c.MaxConnections = 4
	g := serveBudgetGateway(t, c)

	held := make([]net.Conn, c.MaxConnections)
	for i := range held {
		conn, err := net.Dial("tcp", g.proxy)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		held[i] = conn
	}
	waitBudgetMetric(t, g, "fencegw_connections_open", `listener="proxy"`, float64(c.MaxConnections))
	refused, err := net.Dial("tcp", g.proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer refused.Close()
	refused.SetReadDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(refused, "GET /w/x HTTP/1.1\r\nHost: x\r\n\r\n")
	if n, err := refused.Read(make([]byte, 1)); n != 0 || err == nil || errors.Is(err, context.DeadlineExceeded) || budgetTimedOut(err) {
		t.Fatalf("connection beyond max_connections: read %d bytes, %v; want it closed without an answer", n, err)
	}
	if v := g.metric(t, "fencegw_connections_refused_total", `listener="proxy"`); v < 1 {
		t.Errorf("fencegw_connections_refused_total{listener=proxy} = %v, want at least 1", v)
	}
	if v := g.metric(t, "fencegw_connections_open", `listener="proxy"`); v != float64(c.MaxConnections) {
		t.Errorf("fencegw_connections_open{listener=proxy} = %v, want %d", v, c.MaxConnections)
	}
	for _, conn := range held {
		conn.Close()
	}
	waitBudgetMetric(t, g, "fencegw_connections_open", `listener="proxy"`, 0)
	resp, err := http.Get("http://" + g.proxy + "/not-routed")
	if err != nil {
		t.Fatalf("after the held connections closed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("after the held connections closed: %d, want 404", resp.StatusCode)
	}
}

// budgetAddr returns a loopback address free at the time of the call.
func budgetAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func budgetTimedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// waitBudgetMetric waits until the gateway's metric name{labels} is want.
func waitBudgetMetric(t *testing.T, g *budgetGateway, name, labels string, want float64) {
	t.Helper()
	var v float64
	for range 200 {
		if v = g.metric(t, name, labels); v == want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s{%s} = %v, want %v", name, labels, v, want)
}

// TestWatchStreamFlowsPastWriteTimeout: a lease watch lasts longer than
// write_timeout while its client reads it (the deadline is on each write,
// not on the answer).
func TestWatchStreamFlowsPastWriteTimeout(t *testing.T) {
	c := budgetConfig("http://127.0.0.1:1")
	c.WriteTimeout = config.Duration(100 * time.Millisecond)
	g := serveBudgetGatewayWith(t, c, Options{WatchHeartbeat: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+g.control+"/v1/leases/budget-watch/watch", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch = %d, want 200", resp.StatusCode)
	}
	start, lines := time.Now(), 0
	r := bufio.NewReader(resp.Body)
	for time.Since(start) < 10*c.WriteTimeout.D() {
		if _, err := r.ReadString('\n'); err != nil {
			t.Fatalf("watch ended after %s and %d lines (write_timeout %s): %v", time.Since(start), lines, c.WriteTimeout.D(), err)
		}
		lines++
	}
}

// TestProxiedStreamFlowsPastWriteTimeout: an upstream's answer streamed for
// longer than write_timeout, with pauses longer than it, reaches a client
// that reads it.
func TestProxiedStreamFlowsPastWriteTimeout(t *testing.T) {
	const writeTimeout = 100 * time.Millisecond
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range 5 {
			fmt.Fprintf(w, "chunk %d\n", i)
			http.NewResponseController(w).Flush()
			time.Sleep(2 * writeTimeout)
		}
	}))
	defer upstream.Close()
	c := budgetConfig(upstream.URL)
	c.WriteTimeout = config.Duration(writeTimeout)
	g := serveBudgetGateway(t, c)
	resp, err := http.Get("http://" + g.proxy + "/w/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || strings.Count(string(b), "chunk") != 5 {
		t.Fatalf("streamed answer = %d %q, %v; want 200 and 5 chunks", resp.StatusCode, b, err)
	}
}

// TestSlowBodiesAreCutOverTLS: the proxy's listener terminating TLS cuts
// slow bodies as the plain one does, and writes over TLS issued meanwhile,
// HTTP/1.1 and HTTP/2, succeed.
func TestSlowBodiesAreCutOverTLS(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer upstream.Close()
	c := budgetConfig(upstream.URL)
	certFile, keyFile := testtls.WriteFiles(t, t.TempDir())
	c.TLS = &config.ListenerTLS{CertFile: certFile, KeyFile: keyFile}
	g := serveBudgetGateway(t, c)

	tc := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}
	dial := func() (net.Conn, error) { return tls.Dial("tcp", g.proxy, tc) }
	budget := c.BodyTimeout.D() + 60000*time.Second/time.Duration(c.MinBodyRate)
	done := cutSlowBodies(t, 60, budget, []slowTarget{
		{dial, http.MethodPost, "/w/slow"},     // 428: no Fencing-Token
		{dial, http.MethodPost, "/not-routed"}, // 404
	})
	h1 := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	defer h1.CloseIdleConnections()
	h2 := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{ForceAttemptHTTP2: true,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer h2.CloseIdleConnections()
	for i := range 10 {
		client, proto := h1, 1
		if i%2 == 1 {
			client, proto = h2, 2
		}
		req, _ := http.NewRequest(http.MethodPost, "https://"+g.proxy+"/w/ok", strings.NewReader(`{}`))
		req.Header.Set("Fencing-Token", "1")
		req.Header.Set("Fencing-Resource", "budget-test")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("write %d over HTTP/%d during the slow bodies: %v", i, proto, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent || resp.ProtoMajor != proto {
			t.Fatalf("write %d over HTTP/%d during the slow bodies = %d over %s, want 204", i, proto, resp.StatusCode, resp.Proto)
		}
	}
	done()
}
