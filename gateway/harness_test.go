package gateway_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/control"

	"github.com/fencegw/fencegw/wire"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/internal/testutil/testpg"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/server"
	"github.com/fencegw/fencegw/telemetry"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/boltstore"
	"github.com/fencegw/fencegw/tokens/etcdstore"
	"github.com/fencegw/fencegw/tokens/pgstore"
	"github.com/fencegw/fencegw/tokens/signed"
	"github.com/fencegw/fencegw/tokens/storetest"
)

// backend prepares stores of one kind for gateway tests.
type backend struct {
	name string
	// fresh returns a factory over fresh state; each call of the factory is
	// a new client of that state (a restarted or a second replica).
	fresh func(t *testing.T) storetest.Factory
	// outage is like fresh over a service of the test's own that it can
	// stop and restart; nil when the store is not a separate service.
	outage func(t *testing.T) (f storetest.Factory, stop, restart func())
}

// shortTTL is the shortest ttl_seconds the backend grants: etcd keeps
// whole seconds from 2 (etcdstore.MinLeaseTTL), the others from 1.
func (b backend) shortTTL() int {
	if b.name == "etcd" {
		return 2
	}
	return 1
}

// backends are the stores the gateway tests run over: the embedded one,
// PostgreSQL and etcd; with -short (the quick tier) the embedded one only.
func backends() []backend {
	if testing.Short() {
		return []backend{{name: "embedded", fresh: boltFresh}}
	}
	return []backend{
		{name: "embedded", fresh: boltFresh},
		{name: "postgres", fresh: pgFresh, outage: pgOutage},
		{name: "etcd", fresh: etcdFresh, outage: etcdOutage},
	}
}

func boltFresh(t *testing.T) storetest.Factory {
	path := filepath.Join(t.TempDir(), "fencegw.db")
	return func(t *testing.T) tokens.Store {
		s, err := boltstore.Open(path)
		if err != nil {
			t.Fatalf("open embedded store: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

func pgFactory(dsn string) storetest.Factory {
	return func(t *testing.T) tokens.Store {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := pgstore.Open(ctx, dsn)
		if err != nil {
			t.Fatalf("open postgres store: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

func pgFresh(t *testing.T) storetest.Factory {
	return pgFactory(testpg.Shared(t).NewDatabase(t))
}

func pgOutage(t *testing.T) (storetest.Factory, func(), func()) {
	c := testpg.Require(t)
	f := pgFactory(c.NewDatabase(t))
	stop := func() {
		if err := c.Stop(); err != nil {
			t.Fatalf("stop postgres: %v", err)
		}
	}
	restart := func() {
		if err := c.Restart(); err != nil {
			t.Fatalf("restart postgres: %v", err)
		}
	}
	return f, stop, restart
}

func etcdFactory(endpoints []string, prefix string) storetest.Factory {
	return func(t *testing.T) tokens.Store {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: endpoints, Prefix: prefix, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("open etcd store: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

var prefixSeq struct {
	sync.Mutex
	n int
}

func uniquePrefix() string {
	prefixSeq.Lock()
	defer prefixSeq.Unlock()
	prefixSeq.n++
	return "/fencegw-test/" + strconv.Itoa(prefixSeq.n) + "/"
}

func etcdFresh(t *testing.T) storetest.Factory {
	c := testetcd.Start(t, 1)
	return etcdFactory(c.Endpoints(), uniquePrefix())
}

func etcdOutage(t *testing.T) (storetest.Factory, func(), func()) {
	c := testetcd.Start(t, 1)
	return etcdFactory(c.Endpoints(), uniquePrefix()), c.Stop, c.Restart
}

// testUpstream records what reached it.
type testUpstream struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []*http.Request
	// delay holds every answer this long.
	delay time.Duration
}

func newUpstream(t *testing.T) *testUpstream {
	u := &testUpstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		u.mu.Lock()
		u.got = append(u.got, r)
		d := u.delay
		u.mu.Unlock()
		if d > 0 {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("X-Upstream", "yes")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "stored:"+string(body))
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *testUpstream) requests() []*http.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*http.Request(nil), u.got...)
}

// gw is one gateway replica: proxy and control API over one store client.
type gw struct {
	proxy  *httptest.Server
	api    *httptest.Server
	fence  *tokens.Fence
	auth   *testAuthority
	server *server.Server
}

// flushAudit writes the gateway's audit entries to its store now.
func (g *gw) flushAudit(t *testing.T) {
	t.Helper()
	if err := g.server.FlushAudit(context.Background()); err != nil {
		t.Fatalf("flush audit: %v", err)
	}
}

type routeSpec struct {
	prefix, resource string
	methods          []string
	strip            bool
	tokens           policy.TokenMode // raw when empty
	idempotency      string           // optional when empty
	rawOnLeased      bool             // raw_on_leased: allow
}

// testAuthority signs and verifies tokens with a fresh Ed25519 key.
type testAuthority struct {
	keys     *signed.Keyring
	signer   *signed.Signer
	verifier *signed.Verifier
}

func newTestAuthority(t testing.TB) *testAuthority {
	t.Helper()
	k, err := signed.GenerateKey("EdDSA")
	if err != nil {
		t.Fatal(err)
	}
	ring, err := signed.NewKeyring(k)
	if err != nil {
		t.Fatal(err)
	}
	s, err := signed.NewSigner(ring, "fencegw", "fencegw", 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	v, err := signed.NewVerifier(ring, "fencegw", "fencegw")
	if err != nil {
		t.Fatal(err)
	}
	return &testAuthority{keys: ring, signer: s, verifier: v}
}

func (a *testAuthority) Issue(holder, resource string, epoch int64) (string, time.Time, error) {
	return a.signer.Sign(holder, resource, epoch, time.Now())
}

// gatewayOptions tune newGatewayWith beyond the store and routes.
type gatewayOptions struct {
	transport http.RoundTripper
	auth      *testAuthority
	keys      control.APIKeys
	sources   map[string]tokens.EpochSource // by route prefix
	// upstreamTimeout bounds admitted exchanges (gateway default when 0).
	upstreamTimeout time.Duration
	// maxBody caps request bodies (1 MiB when 0).
	maxBody int64
	// observed records spans, metrics and the audit (none when nil).
	observed *observed
	// heartbeat is the lease watches' heartbeat (the default when 0).
	heartbeat time.Duration
	// replica names the gateway in the audit (the host name when empty).
	replica string
	// auditFlush is how often the audit is written (the default when 0).
	auditFlush time.Duration
	// auditInterval is how long identical events are one entry (the
	// default when 0).
	auditInterval time.Duration
	// traceURL is the timeline page's ui.trace_url.
	traceURL string
	// idemTTL is idempotency.ttl, unchecked (the default when 0).
	idemTTL time.Duration
	// maxWatchers is watch.max_watchers (the default when 0).
	maxWatchers int
	// control is the control API's browser defences (control.*).
	control config.Control
	// auditMaxPending is audit.history.max_pending and
	// audit.junk.max_pending (the defaults when 0).
	auditMaxPending int
	// maxLive is leases.max_live (the default when 0).
	maxLive int
	// log receives the gateway's log (discarded when nil).
	log slog.Handler
}

// tokensEpochSource abbreviates the epoch source type in tables.
type tokensEpochSource = tokens.EpochSource

func newGateway(t *testing.T, store tokens.Store, up *testUpstream, transport http.RoundTripper, specs ...routeSpec) *gw {
	t.Helper()
	return newGatewayWith(t, store, up, gatewayOptions{transport: transport}, specs...)
}

func newGatewayWith(t *testing.T, store tokens.Store, up *testUpstream, o gatewayOptions, specs ...routeSpec) *gw {
	t.Helper()
	if o.auth == nil {
		o.auth = newTestAuthority(t)
	}
	if len(specs) == 0 {
		specs = []routeSpec{{prefix: "/email/", resource: "invoice-sweeper"}, {prefix: "/any/"}}
	}
	c := config.Default()
	c.MaxBodyBytes = 1 << 20
	if o.maxBody > 0 {
		c.MaxBodyBytes = o.maxBody
	}
	if o.upstreamTimeout > 0 {
		c.UpstreamTimeout = config.Duration(o.upstreamTimeout)
	}
	c.Audit.Replica = o.replica
	c.Control = o.control
	c.UI.TraceURL = o.traceURL
	if o.maxWatchers > 0 {
		c.Watch.MaxWatchers = o.maxWatchers
	}
	if o.maxLive > 0 {
		c.Leases.MaxLive = o.maxLive
	}
	if o.auditFlush > 0 {
		c.Audit.Flush = config.Duration(o.auditFlush)
	}
	if o.auditInterval > 0 {
		c.Audit.Interval = config.Duration(o.auditInterval)
	}
	if o.idemTTL > 0 {
		c.Idempotency.TTL = config.Duration(o.idemTTL)
	}
	if o.auditMaxPending > 0 {
		c.Audit.History.MaxPending, c.Audit.Junk.MaxPending = o.auditMaxPending, o.auditMaxPending
	}
	sources := map[*config.EpochSource]tokens.EpochSource{}
	for _, s := range specs {
		r := config.Route{Prefix: s.prefix, Upstream: up.srv.URL, Tokens: string(s.tokens), StripPrefix: s.strip,
			Methods: s.methods, Resource: s.resource, Idempotency: s.idempotency}
		if s.rawOnLeased {
			r.RawOnLeased = config.RawOnLeasedAllow
		}
		if r.Tokens == "" {
			r.Tokens = config.TokensRaw
		}
		if src, ok := o.sources[s.prefix]; ok {
			// The kind is only named (metrics, spans, the audit):
			// OpenSource below returns the test's source.
			r.EpochSource = &config.EpochSource{Kind: "kubernetes"}
			sources[r.EpochSource] = src
		}
		c.Routes = append(c.Routes, r)
	}
	for _, k := range o.keys {
		c.APIKeys = append(c.APIKeys, config.APIKey{Name: k.Name, SHA256: hex.EncodeToString(k.Hash[:]), Leases: k.Leases, Admin: k.Admin,
			MaxLeases: k.MaxLeases})
	}
	if o.log == nil {
		o.log = slog.DiscardHandler
	}
	opts := server.Options{Logger: slog.New(o.log), Store: store, Transport: o.transport, WatchHeartbeat: o.heartbeat,
		Authority:  &signed.Authority{Keys: o.auth.keys, Signer: o.auth.signer, Verifier: o.auth.verifier},
		OpenSource: func(_ string, s *config.EpochSource) (tokens.EpochSource, error) { return sources[s], nil }}
	if o.observed != nil {
		opts.Telemetry = &telemetry.Telemetry{TracerProvider: o.observed.tp, MeterProvider: o.observed.mp}
	}
	s, err := server.New(context.Background(), c, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	spec := trafficChecker(t) // every exchange is checked against openapi.yaml
	g := &gw{
		proxy:  httptest.NewServer(spec.Proxy(t.Name(), s.Proxy())),
		api:    httptest.NewServer(spec.Control(t.Name(), s.Control())),
		auth:   o.auth,
		fence:  s.Fence(),
		server: s,
	}
	t.Cleanup(g.proxy.Close)
	t.Cleanup(g.api.Close)
	return g
}

// assemble builds a gateway from c with server.New, as the binary does
// (discarding logs unless o has a Logger), and closes it at cleanup.
func assemble(tb testing.TB, c config.Config, o server.Options) *server.Server {
	tb.Helper()
	if err := c.Validate(); err != nil {
		tb.Fatal(err)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s, err := server.New(context.Background(), c, o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// embeddedConfig is the default configuration over a fresh embedded store.
func embeddedConfig(tb testing.TB) config.Config {
	c := config.Default()
	c.Store = filepath.Join(tb.TempDir(), "fencegw.db")
	// httptest.NewRequest names the host example.com: the control API's
	// Host check admits it here.
	c.Control.AllowedHosts = []string{"example.com"}
	return c
}

// answer is a response with its body read.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) problem(t *testing.T) map[string]any {
	t.Helper()
	if ct := a.header.Get("Content-Type"); ct != wire.ProblemContentType {
		t.Fatalf("status %d Content-Type %q, want %s; body %s", a.status, ct, wire.ProblemContentType, a.body)
	}
	var p map[string]any
	if err := json.Unmarshal(a.body, &p); err != nil {
		t.Fatalf("problem body %q: %v", a.body, err)
	}
	if int(p["status"].(float64)) != a.status {
		t.Fatalf("problem status %v, response %d", p["status"], a.status)
	}
	return p
}

// do sends a request with the given header fields and body, and returns
// the answer.
func do(t *testing.T, method, target string, header map[string]string, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, target, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	// The control API takes state changes as JSON only: its calls say so
	// unless the test names a Content-Type itself.
	if _, named := header["Content-Type"]; !named && body != "" && strings.HasPrefix(req.URL.Path, "/v1/") {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return send(t, req)
}

// send sends req as it is and returns the answer.
func send(t *testing.T, req *http.Request) answer {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

func (g *gw) write(t *testing.T, path, token string) answer {
	t.Helper()
	h := map[string]string{}
	if token != "" {
		h[gateway.TokenHeader] = token
	}
	return do(t, http.MethodPost, g.proxy.URL+path, h, "payload")
}

// fenceEpoch reads a resource's epoch through the control API.
func (g *gw) fenceEpoch(t *testing.T, resource string) int64 {
	t.Helper()
	return g.fenceEpochWith(t, nil, resource)
}

// fenceEpochWith reads a resource's epoch through the control API, with
// the given header fields (an API key).
func (g *gw) fenceEpochWith(t *testing.T, header map[string]string, resource string) int64 {
	t.Helper()
	a := do(t, http.MethodGet, g.api.URL+"/v1/fences/"+url.PathEscape(resource), header, "")
	if a.status != http.StatusOK {
		t.Fatalf("GET fence %q: %d %s", resource, a.status, a.body)
	}
	var st wire.FenceState
	if err := json.Unmarshal(a.body, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Epoch)
}
