package faults

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/internal/testutil/testpg"
)

// The cluster under test: a store (PostgreSQL, or a three-member etcd),
// three fencegw processes, each reaching the store and the upstream
// through fault proxies of its own, and one recording upstream.

// leaseTTL is the leaders' lease; the lease-related faults outlast it.
const leaseTTL = 2 * time.Second

// upstreamTimeout bounds an admitted exchange in the gateways.
const upstreamTimeout = 2 * time.Second

// cluster is the system under test.
type cluster struct {
	t     *testing.T
	store string // "postgres" or "etcd"
	pg    *testpg.Cluster
	etcd  *testetcd.Cluster
	dsn   string // the PostgreSQL database, as the suite reaches it directly
	// storeProxies[r] are replica r's ways to the store: one for
	// PostgreSQL, one per member for etcd.
	storeProxies [][]*Proxy
	upProxies    []*Proxy
	up           *recorder
	gateways     []*gatewayProc
	// stoppedMember is the etcd member a fault stopped.
	stoppedMember int
	// pprof serves the gateways' profiles (the soak counts goroutines).
	pprof bool
	// jumper makes the clock-jump fault.
	jumper clockJumper
	// source, when set, is the epoch source of the route /src/, and
	// sourceProxies[r] are replica r's ways to its servers.
	source        *sourceRoute
	sourceProxies [][]*Proxy
}

// sourceRoute is an epoch source the gateways' route /src/ is fenced by.
type sourceRoute struct {
	// targets are the source's server addresses; each replica reaches
	// them through proxies of its own.
	targets []string
	// yaml is the route's epoch_source, given the addresses a replica
	// reaches targets at (its proxies, in the same order).
	yaml func(addrs []string) string
	// resources are the resources whose leaders the source elects,
	// written at /src/{resource}/. With one, the route's resource is that
	// fixed name (a source that reads one election for the whole route
	// needs it); with more, the path's segment names it.
	resources []string
}

// newCluster starts the store, the upstream and three gateways.
func newCluster(t *testing.T, store string) *cluster { return newClusterWith(t, store, false) }

// newClusterWith is newCluster, with Go's profiles served by the gateways
// when pprof is set.
func newClusterWith(t *testing.T, store string, pprof bool) *cluster {
	return startCluster(&cluster{t: t, store: store, up: newRecorder(t), pprof: pprof})
}

// newSourceCluster is newCluster with a route /src/{resource}/ fenced by
// src (see sourceRouteYAML); src.resources must not be empty.
func newSourceCluster(t *testing.T, store string, src sourceRoute) *cluster {
	return startCluster(&cluster{t: t, store: store, up: newRecorder(t), source: &src})
}

// startCluster starts c's store, proxies and gateways.
func startCluster(c *cluster) *cluster {
	t, store := c.t, c.store
	var targets []string // the store's addresses
	switch store {
	case "postgres":
		c.pg = testpg.Require(t)
		c.dsn = c.pg.NewDatabase(t)
		u, err := url.Parse(c.dsn)
		if err != nil {
			t.Fatal(err)
		}
		targets = []string{u.Host}
	case "etcd":
		c.etcd = testetcd.Start(t, 3)
		for _, ep := range c.etcd.Endpoints() {
			targets = append(targets, strings.TrimPrefix(ep, "http://"))
		}
	}
	for r := 0; r < 3; r++ {
		var ps []*Proxy
		for _, target := range targets {
			ps = append(ps, c.proxy(target))
		}
		c.storeProxies = append(c.storeProxies, ps)
		if c.source != nil {
			var sps []*Proxy
			for _, target := range c.source.targets {
				sps = append(sps, c.proxy(target))
			}
			c.sourceProxies = append(c.sourceProxies, sps)
		}
		c.upProxies = append(c.upProxies, c.proxy(strings.TrimPrefix(c.up.srv.URL, "http://")))
		c.gateways = append(c.gateways, c.startGateway(r))
	}
	return c
}

func (c *cluster) proxy(target string) *Proxy {
	p, err := NewProxy(target)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { p.Close() })
	return p
}

// storeURL is replica r's store URL, through its proxies.
func (c *cluster) storeURL(r int) string {
	if c.store == "etcd" {
		var eps []string
		for _, p := range c.storeProxies[r] {
			eps = append(eps, p.Addr())
		}
		return "etcd://" + strings.Join(eps, ",")
	}
	u, _ := url.Parse(c.dsn)
	u.Host = c.storeProxies[r][0].Addr()
	q := u.Query()
	// Acknowledged commits must survive a SIGKILL of the server (the test
	// server runs with synchronous_commit off for speed).
	q.Set("synchronous_commit", "on")
	u.RawQuery = q.Encode()
	return u.String()
}

// config is replica r's configuration: a raw route whose resource comes
// from X-Resource, and a signed route bound to the lease.
func (c *cluster) config(r int) string {
	y := fmt.Sprintf(`store: %q
store_timeout: 1s
upstream_timeout: %s
upstream_response_header_timeout: %s
audit:
  replica: gw-%d
telemetry:
  pprof: %t
routes:
  - prefix: "/raw/"
    upstream: "http://%s"
    tokens: raw
    resource: "{header:X-Resource}"
  - prefix: "/w/"
    upstream: "http://%s"
    tokens: signed
    resource: %q
`, c.storeURL(r), upstreamTimeout, upstreamTimeout, r, c.pprof, c.upProxies[r].Addr(), c.upProxies[r].Addr(), leaseName)
	y += c.sourceRouteYAML(r)
	path := filepath.Join(c.t.TempDir(), "fencegw.yaml")
	if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// sourceRouteYAML is replica r's route fenced by the cluster's epoch
// source, if any: prefix /src/, the resource the path's first segment
// below it (or the source's one resource), upstream the recorder.
func (c *cluster) sourceRouteYAML(r int) string {
	if c.source == nil {
		return ""
	}
	var addrs []string
	for _, p := range c.sourceProxies[r] {
		addrs = append(addrs, p.Addr())
	}
	resource := "{segment:1}"
	if len(c.source.resources) == 1 {
		resource = c.source.resources[0]
	}
	return fmt.Sprintf(`  - prefix: "/src/"
    upstream: "http://%s"
    tokens: raw
    resource: %q
    epoch_source: %s
`, c.upProxies[r].Addr(), resource, c.source.yaml(addrs))
}

// gatewayProc is one fencegw process; restarts keep its addresses.
type gatewayProc struct {
	replica    int
	proxyAddr  string
	apiAddr    string
	configPath string
	mu         sync.Mutex
	cmd        *exec.Cmd
	done       chan struct{}
	stderr     *lockedBuffer

	// clockFile holds the offset of the process's wall clock (see
	// jumpClock); a restart keeps it, as a host keeps its clock.
	clockFile string
}

func (g *gatewayProc) proxyURL() string { return "http://" + g.proxyAddr }
func (g *gatewayProc) apiURL() string   { return "http://" + g.apiAddr }

func (c *cluster) startGateway(r int) *gatewayProc {
	g := &gatewayProc{replica: r, proxyAddr: freeAddr(c.t), apiAddr: freeAddr(c.t), configPath: c.config(r),
		clockFile: filepath.Join(c.t.TempDir(), "clock-offset"), stderr: &lockedBuffer{}}
	g.jumpClock(c.t, 0)
	c.t.Cleanup(func() {
		g.signal(syscall.SIGCONT)
		g.kill()
		if c.t.Failed() {
			c.t.Logf("gateway %d stderr (tail):\n%s", r, g.stderr.tail(1500))
		}
	})
	g.start(c.t)
	return g
}

// start runs the process and waits until its control API answers.
func (g *gatewayProc) start(t *testing.T) {
	cmd := exec.Command(binary, "serve", "--config", g.configPath, "--listen", g.proxyAddr, "--api-listen", g.apiAddr)
	cmd.Env = append(os.Environ(), envGatewayTestHooks+"=1", envGatewayClockFile+"="+g.clockFile)
	cmd.Stderr = g.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	g.mu.Lock()
	g.cmd, g.done = cmd, done
	g.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(g.apiURL() + "/healthz")
		if err == nil {
			resp.Body.Close()
			return
		}
		select {
		case <-done:
			t.Fatalf("gateway %d exited at start:\n%s", g.replica, g.stderr.tail(4000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway %d did not come up:\n%s", g.replica, g.stderr.tail(4000))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill ends the process with SIGKILL and waits for it.
func (g *gatewayProc) kill() {
	g.mu.Lock()
	cmd, done := g.cmd, g.done
	g.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-done
}

func (g *gatewayProc) signal(s syscall.Signal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cmd != nil {
		g.cmd.Process.Signal(s)
	}
}

// pid is the process id, for sampling its memory.
func (g *gatewayProc) pid() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cmd.Process.Pid
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// recorder is the upstream: it records every write's receipt interval and
// answers 201, after slow when the write is on the lease and slow is set.
type recorder struct {
	srv  *httptest.Server
	slow atomic.Int64 // nanoseconds
	mu   sync.Mutex
	got  []Receipt
}

func newRecorder(t *testing.T) *recorder {
	rec := &recorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		b, err := io.ReadAll(r.Body)
		got := Receipt{OpID: r.Header.Get("X-Op"), Resource: r.Header.Get("Fencing-Resource"),
			Key: r.Header.Get("Idempotency-Key"), Holder: r.Header.Get("X-Holder"), Start: start, End: time.Now(),
			Whole: err == nil && (r.ContentLength < 0 || int64(len(b)) == r.ContentLength)}
		got.Replica, _ = strconv.Atoi(r.Header.Get("X-Replica"))
		got.Epoch, _ = strconv.ParseInt(r.Header.Get("Fencing-Epoch"), 10, 64)
		rec.mu.Lock()
		rec.got = append(rec.got, got)
		rec.mu.Unlock()
		if d := time.Duration(rec.slow.Load()); d > 0 && got.Resource == leaseName {
			time.Sleep(d)
		}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (rec *recorder) receipts() []Receipt {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]Receipt(nil), rec.got...)
}

// lockedBuffer keeps a process's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b[max(0, len(l.b)-n):])
}
