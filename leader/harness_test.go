package leader_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/wire"

	"go.uber.org/goleak"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/leader"
	"github.com/fencegw/fencegw/server"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testGateway is a fencegw in this process over real HTTP: the control API
// (lease endpoints) and the proxy, whose route /email/ is fenced by the
// resource named like the lease, accepts raw epochs and signed tokens, and
// leads to an upstream that records what reached it.
type testGateway struct {
	ControlURL string // the control API's base URL
	ProxyURL   string // the proxy's base URL

	api, proxy, upstream *httptest.Server
	client               *http.Client // the harness's own calls
	srv                  *server.Server
	dir                  string

	mu       sync.Mutex
	received []http.Header // headers of the requests the upstream received
}

type gatewayOptions struct {
	keys []config.APIKey
	// upstream, when set, answers the requests the upstream receives
	// (after they were recorded) instead of 201.
	upstream http.HandlerFunc
}

// startGateway starts a gateway fencing resource (the lease's name) on a
// fresh embedded store, assembled by server.New as the binary does. Close
// stops it.
func startGateway(resource string, opts ...gatewayOptions) (*testGateway, error) {
	var o gatewayOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	dir, err := os.MkdirTemp("", "leader-test-")
	if err != nil {
		return nil, err
	}
	g := &testGateway{dir: dir,
		client: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: 10 * time.Second}}
	g.upstream = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		g.mu.Lock()
		g.received = append(g.received, r.Header.Clone())
		g.mu.Unlock()
		if o.upstream != nil {
			o.upstream(w, r)
			return
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "upstream saw Fencing-Epoch %s", r.Header.Get(gateway.EpochHeader))
	}))
	c := config.Default()
	c.Store = filepath.Join(dir, "fencegw.db")
	c.MaxBodyBytes = 1 << 20
	c.APIKeys = o.keys
	// Raw epochs stand for a paused leader's old token here: the route
	// trusts them on the leased resource.
	c.Routes = []config.Route{{Prefix: "/email/", Upstream: g.upstream.URL, Tokens: config.TokensAny, Resource: resource,
		RawOnLeased: config.RawOnLeasedAllow}}
	if err := c.Validate(); err != nil {
		g.Close()
		return nil, err
	}
	if g.srv, err = server.New(context.Background(), c, server.Options{Logger: slog.New(slog.DiscardHandler)}); err != nil {
		g.Close()
		return nil, err
	}
	g.proxy = httptest.NewServer(g.srv.Proxy())
	g.api = httptest.NewServer(g.srv.Control())
	g.ControlURL, g.ProxyURL = g.api.URL, g.proxy.URL
	return g, nil
}

// Close stops the servers and removes the store.
func (g *testGateway) Close() {
	for _, s := range []*httptest.Server{g.proxy, g.api, g.upstream} {
		if s != nil {
			s.Close()
		}
	}
	g.client.CloseIdleConnections()
	if g.srv != nil {
		g.srv.Close()
	}
	os.RemoveAll(g.dir)
}

// newGateway starts a gateway for a test.
func newGateway(t *testing.T, resource string, opts ...gatewayOptions) *testGateway {
	t.Helper()
	g, err := startGateway(resource, opts...)
	if err != nil {
		t.Fatalf("start gateway: %v", err)
	}
	t.Cleanup(g.Close)
	return g
}

// received returns the headers of the requests that reached the upstream.
func (g *testGateway) receivedHeaders() []http.Header {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]http.Header(nil), g.received...)
}

// lease reads the lease's state through the control API.
func (g *testGateway) lease(t *testing.T, name string) wire.LeaseState {
	t.Helper()
	resp, err := g.client.Get(g.ControlURL + "/v1/leases/" + url.PathEscape(name))
	if err != nil {
		t.Fatalf("GET lease: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET lease %q: %d %s", name, resp.StatusCode, body)
	}
	var st wire.LeaseState
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// leaseCall POSTs body to a lease endpoint and returns status and body.
func (g *testGateway) leaseCall(t *testing.T, name, op string, body any) (int, []byte) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := g.client.Post(g.ControlURL+"/v1/leases/"+url.PathEscape(name)+"/"+op, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("POST %s: %v", op, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// rawWrite sends a write to the proxy with a raw epoch, bypassing any
// Elector, as a paused leader that woke up would.
func (g *testGateway) rawWrite(t *testing.T, epoch int64) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, g.ProxyURL+"/email/send", bytes.NewBufferString("stale"))
	req.Header.Set(gateway.TokenHeader, fmt.Sprint(epoch))
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatalf("raw write: %v", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// write sends a write to the proxy through client.
func write(ctx context.Context, g *testGateway, client *http.Client) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.ProxyURL+"/email/send", bytes.NewBufferString("hello"))
	if err != nil {
		return 0, "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// switchTransport can hold every request until its context ends, as if
// the process were paused or cut off from the control API.
type switchTransport struct {
	base http.RoundTripper
	mu   sync.Mutex
	hold bool
}

func (s *switchTransport) setHold(h bool) {
	s.mu.Lock()
	s.hold = h
	s.mu.Unlock()
}

func (s *switchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	hold := s.hold
	s.mu.Unlock()
	if hold {
		if req.Body != nil {
			req.Body.Close()
		}
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	return s.base.RoundTrip(req)
}

// recorder collects an Elector's callbacks; its OnStartedLeading works
// until its context is cancelled.
type recorder struct {
	name    string
	ev      *events
	started chan started
	stopped chan stopped
	renewed chan leader.Term
}

type started struct {
	ctx  context.Context
	term leader.Term
}

type stopped struct {
	term   leader.Term
	reason error
}

func newRecorder(name string, ev *events) *recorder {
	if ev == nil {
		ev = &events{}
	}
	return &recorder{name: name, ev: ev, started: make(chan started, 16), stopped: make(chan stopped, 16),
		renewed: make(chan leader.Term, 64)}
}

func (r *recorder) callbacks() leader.Callbacks {
	return leader.Callbacks{
		OnStartedLeading: func(ctx context.Context, term leader.Term) {
			r.ev.add(fmt.Sprintf("%s started %d", r.name, term.Epoch))
			r.started <- started{ctx, term}
			<-ctx.Done()
		},
		OnStoppedLeading: func(term leader.Term, reason error) {
			r.ev.add(fmt.Sprintf("%s stopped %d", r.name, term.Epoch))
			r.stopped <- stopped{term, reason}
		},
		OnNewToken: func(term leader.Term) {
			select {
			case r.renewed <- term:
			default:
			}
		},
	}
}

// events is an ordered log shared by several recorders.
type events struct {
	mu  sync.Mutex
	log []string
}

func (ev *events) add(s string) {
	ev.mu.Lock()
	ev.log = append(ev.log, s)
	ev.mu.Unlock()
}

func (ev *events) list() []string {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return append([]string(nil), ev.log...)
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// receive waits for a value on ch, failing the test after limit.
func receive[T any](t *testing.T, ch <-chan T, limit time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(limit):
		t.Fatalf("timed out after %s waiting for %s", limit, what)
		var zero T
		return zero
	}
}

// runElector runs e in the background; the returned function cancels it
// and returns Run's error.
func runElector(t *testing.T, run func(context.Context) error) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(15 * time.Second):
				err = errors.New("Run did not return within 15s of cancel")
			}
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

// lead runs an Elector for cfg, whose callbacks are rec's, and waits until
// it leads; stop cancels its Run (see runElector).
func lead(t *testing.T, cfg leader.Config, rec *recorder) (e *leader.Elector, stop func() error, first started) {
	t.Helper()
	e = mustNew(t, cfg)
	stop = runElector(t, e.Run)
	return e, stop, receive(t, rec.started, wait, cfg.Holder+" to lead")
}

// mustStop calls stop (from runElector) and fails t unless Run returned
// context.Canceled.
func mustStop(t *testing.T, stop func() error) {
	t.Helper()
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
}

// handOver releases from's grant of the lease at epoch and grants the lease
// to holder to for a minute, as happens behind a leader's back.
func (g *testGateway) handOver(t *testing.T, name, from string, epoch int64, to string) {
	t.Helper()
	if code, body := g.leaseCall(t, name, "release", map[string]any{"holder": from, "epoch": epoch}); code != http.StatusNoContent {
		t.Fatalf("release by %s: %d %s", from, code, body)
	}
	if code, body := g.leaseCall(t, name, "acquire", map[string]any{"holder": to, "ttl_seconds": 60}); code != http.StatusOK {
		t.Fatalf("acquire by %s: %d %s", to, code, body)
	}
}

// testLogger sends an Elector's log to the test's log, shown when it fails
// or with -v.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// awaitRenewal waits for a renewal, failing at once if the term ends.
func awaitRenewal(t *testing.T, r *recorder) leader.Term {
	t.Helper()
	select {
	case term := <-r.renewed:
		return term
	case st := <-r.stopped:
		t.Fatalf("%s stopped leading epoch %d instead of renewing: %v", r.name, st.term.Epoch, st.reason)
	case <-time.After(wait):
		t.Fatalf("timed out after %s waiting for %s to renew", wait, r.name)
	}
	return leader.Term{}
}
