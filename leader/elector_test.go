package leader_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/leader"
)

// wait bounds every wait for something that must happen; the timings under
// test are far shorter.
const wait = 10 * time.Second

// testConfig is a config with short timings: lease 3s, renew deadline 2s,
// retry 500ms, renewals every second.
func testConfig(t *testing.T, g *testGateway, name, holder string, rec *recorder) leader.Config {
	c := leader.Config{Endpoint: g.ControlURL, Name: name, Holder: holder,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond,
		Logger: testLogger(t)}
	if rec != nil {
		c.Callbacks = rec.callbacks()
	}
	return c
}

// nodeA returns node-a's testConfig for the lease name on g, and the
// recorder its callbacks report to.
func nodeA(t *testing.T, g *testGateway, name string) (leader.Config, *recorder) {
	rec := newRecorder("a", nil)
	return testConfig(t, g, name, "node-a", rec), rec
}

// writeClient is a client whose writes go through e's Transport.
func writeClient(t *testing.T, e *leader.Elector) *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	return &http.Client{Transport: e.Transport(base), Timeout: wait}
}

func mustNew(t *testing.T, c leader.Config) *leader.Elector {
	t.Helper()
	e, err := leader.New(c)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

func TestValidate(t *testing.T) {
	valid := leader.Config{Endpoint: "http://127.0.0.1:8081", Name: "invoice-sweeper", Holder: "node-a"}
	cases := []struct {
		name  string
		edit  func(c *leader.Config)
		field string // empty: valid
	}{
		{"defaults", func(c *leader.Config) {}, ""},
		{"seed timings", func(c *leader.Config) {
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod, c.RenewInterval = 15*time.Second, 10*time.Second, 2*time.Second, 5*time.Second
		}, ""},
		{"long lease, default interval stays below deadline", func(c *leader.Config) { c.LeaseDuration = time.Minute }, ""},
		{"no endpoint", func(c *leader.Config) { c.Endpoint = "" }, "Endpoint"},
		{"relative endpoint", func(c *leader.Config) { c.Endpoint = "127.0.0.1:8081" }, "Endpoint"},
		{"ftp endpoint", func(c *leader.Config) { c.Endpoint = "ftp://127.0.0.1/" }, "Endpoint"},
		{"endpoint without host", func(c *leader.Config) { c.Endpoint = "http:///v1" }, "Endpoint"},
		{"endpoint with query", func(c *leader.Config) { c.Endpoint = "http://h:1/?a=b" }, "Endpoint"},
		{"unparsable endpoint", func(c *leader.Config) { c.Endpoint = "http://h:1/%zz" }, "Endpoint"},
		{"no name", func(c *leader.Config) { c.Name = "" }, "Name"},
		{"no holder", func(c *leader.Config) { c.Holder = "" }, "Holder"},
		{"negative lease", func(c *leader.Config) { c.LeaseDuration = -time.Second }, "LeaseDuration"},
		{"lease under a second", func(c *leader.Config) {
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = 900*time.Millisecond, 600*time.Millisecond, 100*time.Millisecond
		}, "LeaseDuration"},
		{"lease over a day", func(c *leader.Config) { c.LeaseDuration = 25 * time.Hour }, "LeaseDuration"},
		{"lease finer than a millisecond", func(c *leader.Config) { c.LeaseDuration = 15*time.Second + time.Microsecond }, "LeaseDuration"},
		{"negative renew deadline", func(c *leader.Config) { c.RenewDeadline = -1 }, "RenewDeadline"},
		{"negative retry", func(c *leader.Config) { c.RetryPeriod = -1 }, "RetryPeriod"},
		{"negative interval", func(c *leader.Config) { c.RenewInterval = -1 }, "RenewInterval"},
		{"deadline equals lease", func(c *leader.Config) { c.LeaseDuration, c.RenewDeadline = 10*time.Second, 10*time.Second }, "RenewDeadline"},
		{"deadline above lease", func(c *leader.Config) { c.LeaseDuration = 5 * time.Second }, "RenewDeadline"},
		{"deadline within jitter of retry", func(c *leader.Config) { c.RetryPeriod = 9 * time.Second }, "RetryPeriod"},
		{"deadline exactly 1.2 retry", func(c *leader.Config) { c.RenewDeadline, c.RetryPeriod = 12*time.Second, 10*time.Second }, "RetryPeriod"},
		{"interval equals deadline", func(c *leader.Config) { c.RenewInterval = 10 * time.Second }, "RenewInterval"},
		{"interval above deadline", func(c *leader.Config) { c.RenewInterval = 11 * time.Second }, "RenewInterval"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := valid
			tc.edit(&c)
			e, err := leader.New(c)
			if tc.field == "" {
				if err != nil || e == nil {
					t.Fatalf("New: %v, want a valid config", err)
				}
				return
			}
			var ce *leader.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("New: %v, want a *ConfigError for %s", err, tc.field)
			}
			if ce.Field != tc.field || !strings.Contains(err.Error(), "Config."+tc.field) {
				t.Fatalf("error %q names field %q, want %q", err, ce.Field, tc.field)
			}
			if c.Validate() == nil {
				t.Fatalf("Validate accepts what New refuses")
			}
		})
	}
}

func TestElectAndRenew(t *testing.T) {
	const name = "invoice-sweeper"
	g := newGateway(t, name)
	cfg, rec := nodeA(t, g, name)
	e := mustNew(t, cfg)
	if _, ok := e.Current(); ok {
		t.Fatal("Current reports a term before Run")
	}
	stop := runElector(t, e.Run)

	s := receive(t, rec.started, wait, "node-a to lead")
	if s.term.Epoch != 1 || s.term.Token == "" {
		t.Fatalf("first term %+v, want epoch 1 and the authority's token for it", s.term)
	}
	if cur, ok := e.Current(); !ok || cur.Epoch != 1 {
		t.Fatalf("Current = %+v, %v; want epoch 1", cur, ok)
	}
	// Three renewals, each keeping the epoch: renewals span more than the
	// renew deadline, so the term outlived it by renewing.
	for i := 0; i < 3; i++ {
		term := awaitRenewal(t, rec)
		if term.Epoch != 1 {
			t.Fatalf("renewal %d at epoch %d, want 1 (renewal never raises the epoch)", i, term.Epoch)
		}
	}
	if st := g.lease(t, name); st.Holder != "node-a" || st.Epoch != 1 || !st.Held {
		t.Fatalf("lease %+v, want held by node-a at epoch 1", st)
	}

	client := writeClient(t, e)
	for _, ctx := range []context.Context{context.Background(), s.ctx} {
		status, body, err := write(ctx, g, client)
		if err != nil || status != http.StatusCreated || body != "upstream saw Fencing-Epoch 1" {
			t.Fatalf("write: %d %q %v; want 201 through the gateway at epoch 1", status, body, err)
		}
	}
	got := g.receivedHeaders()
	if len(got) != 2 {
		t.Fatalf("upstream received %d writes, want 2", len(got))
	}
	for _, h := range got {
		if h.Get(gateway.EpochHeader) != "1" || h.Get(gateway.ResourceHeader) != name || h.Get(leader.TokenHeader) != "" {
			t.Fatalf("upstream headers %v, want Fencing-Epoch 1, Fencing-Resource %s and no token", h, name)
		}
	}
	select {
	case st := <-rec.stopped:
		t.Fatalf("stepped down while renewing: %v", st.reason)
	default:
	}

	mustStop(t, stop)
	st := receive(t, rec.stopped, wait, "OnStoppedLeading")
	if st.term.Epoch != 1 || !errors.Is(st.reason, context.Canceled) {
		t.Fatalf("stopped %+v, want epoch 1 for context.Canceled", st)
	}
	if s.ctx.Err() == nil {
		t.Fatal("the term's context outlived the term")
	}
	if _, _, err := write(context.Background(), g, client); !errors.Is(err, leader.ErrNotLeader) {
		t.Fatalf("write after Run returned: %v, want ErrNotLeader", err)
	}
}

// TestTakeoverFencesOld is the seed's timeline: node-a is cut off from the
// authority (as if paused), steps down on its own clock before its lease
// can expire, node-b takes over with a higher epoch, and node-a's old term
// can no longer write.
func TestTakeoverFencesOld(t *testing.T) {
	const name = "invoice-sweeper"
	g := newGateway(t, name)
	ev := &events{}
	recA, recB := newRecorder("a", ev), newRecorder("b", ev)

	sw := &switchTransport{base: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(sw.base.(*http.Transport).CloseIdleConnections)
	cfgA := testConfig(t, g, name, "node-a", recA)
	cfgA.HTTPClient = &http.Client{Transport: sw}
	a, stopA, sa := lead(t, cfgA, recA)
	if sa.term.Epoch != 1 {
		t.Fatalf("node-a leads at epoch %d, want 1", sa.term.Epoch)
	}

	b := mustNew(t, testConfig(t, g, name, "node-b", recB))
	stopB := runElector(t, b.Run)

	clientA := writeClient(t, a)
	if status, _, err := write(context.Background(), g, clientA); err != nil || status != http.StatusCreated {
		t.Fatalf("node-a's write while leading: %d %v", status, err)
	}
	awaitRenewal(t, recA)

	// Cut node-a off: its renewals now hang until their deadline.
	sw.setHold(true)
	cut := time.Now()
	st := receive(t, recA.stopped, wait, "node-a to step down on its own clock")
	if !errors.Is(st.reason, leader.ErrLeaseLost) || !errors.Is(st.reason, leader.ErrRenewDeadline) {
		t.Fatalf("node-a stopped for %v, want the renew deadline", st.reason)
	}
	if took := time.Since(cut); took > cfgA.LeaseDuration {
		t.Errorf("node-a stepped down %s after being cut off, not within the lease", took)
	}
	if _, ok := a.Current(); ok {
		t.Fatal("node-a still reports a term")
	}
	if sa.ctx.Err() == nil {
		t.Fatal("node-a's term context was not cancelled")
	}

	sb := receive(t, recB.started, wait, "node-b to take over")
	if sb.term.Epoch != 2 {
		t.Fatalf("node-b leads at epoch %d, want 2", sb.term.Epoch)
	}
	log := ev.list()
	if ia, ib := indexOf(log, "a stopped 1"), indexOf(log, "b started 2"); ia < 0 || ib < 0 || ia > ib {
		t.Fatalf("events %v: node-a must stop leading before node-b starts", log)
	}

	before := len(g.receivedHeaders())
	// node-a's Transport refuses locally; its old epoch, sent anyway (a
	// process that wakes and writes), is refused by the gateway before
	// node-b wrote anything.
	if _, _, err := write(context.Background(), g, clientA); !errors.Is(err, leader.ErrNotLeader) {
		t.Fatalf("node-a's write after stepping down: %v, want ErrNotLeader", err)
	}
	if status := g.rawWrite(t, 1); status != http.StatusPreconditionFailed {
		t.Fatalf("write at node-a's old epoch 1: %d, want 412", status)
	}
	if n := len(g.receivedHeaders()); n != before {
		t.Fatalf("upstream received %d writes from the old term", n-before)
	}
	clientB := writeClient(t, b)
	if status, body, err := write(context.Background(), g, clientB); err != nil || status != http.StatusCreated ||
		body != "upstream saw Fencing-Epoch 2" {
		t.Fatalf("node-b's write: %d %q %v", status, body, err)
	}

	// node-a, reconnected, stays a follower while node-b renews.
	sw.setHold(false)
	if s := g.lease(t, name); s.Holder != "node-b" || s.Epoch != 2 {
		t.Fatalf("lease %+v, want node-b at epoch 2", s)
	}
	mustStop(t, stopA)
	mustStop(t, stopB)
}

func TestStepDownOn412(t *testing.T) {
	const name = "invoice-sweeper"
	g := newGateway(t, name)
	cfg, rec := nodeA(t, g, name)
	// Renew rarely and no watch, so that the 412 and not a refused
	// renewal or the watch tells node-a.
	cfg.LeaseDuration, cfg.RenewDeadline, cfg.RenewInterval = 10*time.Second, 8*time.Second, 7*time.Second
	cfg.NoWatch = true
	e, stop, s := lead(t, cfg, rec)

	// Behind node-a's back, its lease ends and node-b is granted epoch 2,
	// which fences the resource.
	g.handOver(t, name, "node-a", s.term.Epoch, "node-b")

	client := writeClient(t, e)
	status, _, err := write(context.Background(), g, client)
	if err != nil || status != http.StatusPreconditionFailed {
		t.Fatalf("write at the fenced epoch: %d %v, want 412", status, err)
	}
	if _, ok := e.Current(); ok {
		t.Fatal("still leading when the 412 reached the caller")
	}
	st := receive(t, rec.stopped, wait, "OnStoppedLeading")
	if !errors.Is(st.reason, leader.ErrFenced) || st.term.Epoch != 1 {
		t.Fatalf("stopped %+v, want epoch 1 for ErrFenced", st)
	}
	if s.ctx.Err() == nil {
		t.Fatal("the term's context was not cancelled")
	}
	for i := 0; i < 3; i++ {
		if _, _, err := write(context.Background(), g, client); !errors.Is(err, leader.ErrNotLeader) {
			t.Fatalf("write after the step-down: %v, want ErrNotLeader", err)
		}
	}
	if n := len(g.receivedHeaders()); n != 0 {
		t.Fatalf("upstream received %d writes, want none", n)
	}
	mustStop(t, stop)
	select {
	case s := <-rec.started:
		t.Fatalf("led again at epoch %d while node-b holds the lease", s.term.Epoch)
	default:
	}
}

func TestRenewRefused(t *testing.T) {
	const name = "invoice-sweeper"
	g := newGateway(t, name)
	cfg, rec := nodeA(t, g, name)
	cfg.NoWatch = true // the refused renewal, not the watch, must tell node-a
	_, stop, s := lead(t, cfg, rec)

	// Another holder takes the lease behind node-a's back.
	g.handOver(t, name, "node-a", s.term.Epoch, "node-b")
	st := receive(t, rec.stopped, wait, "node-a to learn at its next renewal")
	var ae *leader.APIError
	if !errors.Is(st.reason, leader.ErrLeaseLost) || errors.Is(st.reason, leader.ErrRenewDeadline) ||
		!errors.As(st.reason, &ae) || ae.Status != http.StatusConflict || ae.Holder != "node-b" || ae.CurrentEpoch != 2 {
		t.Fatalf("stopped for %v (%+v), want a 409 naming node-b at epoch 2", st.reason, ae)
	}
	mustStop(t, stop)
}

func TestReleaseOnCancel(t *testing.T) {
	const name = "invoice-sweeper"
	g := newGateway(t, name)
	cfg, rec := nodeA(t, g, name)
	cfg.ReleaseOnCancel = true
	_, stop, _ := lead(t, cfg, rec)

	mustStop(t, stop)
	st := receive(t, rec.stopped, wait, "OnStoppedLeading")
	if !errors.Is(st.reason, context.Canceled) {
		t.Fatalf("stopped for %v", st.reason)
	}
	if s := g.lease(t, name); s.Held || s.Holder != "node-a" || s.Epoch != 1 {
		t.Fatalf("lease after Run returned: %+v, want released by node-a at epoch 1", s)
	}

	// A rival need not wait for expiry.
	recB := newRecorder("b", nil)
	b := mustNew(t, testConfig(t, g, name, "node-b", recB))
	stopB := runElector(t, b.Run)
	if s := receive(t, recB.started, 2*time.Second, "node-b to lead at once"); s.term.Epoch != 2 {
		t.Fatalf("node-b leads at epoch %d, want 2", s.term.Epoch)
	}
	stopB()
}

func TestStepDownCampaignsAgain(t *testing.T) {
	const name = "invoice-sweeper"
	g := newGateway(t, name)
	cfg, rec := nodeA(t, g, name)
	e, stop, s1 := lead(t, cfg, rec)

	resync := errors.New("resync")
	e.StepDown(resync)
	if _, ok := e.Current(); ok {
		t.Fatal("Current reports a term after StepDown")
	}
	st := receive(t, rec.stopped, wait, "OnStoppedLeading")
	if !errors.Is(st.reason, resync) || st.term.Epoch != 1 {
		t.Fatalf("stopped %+v, want epoch 1 for the given reason", st)
	}
	e.StepDown(nil) // not leading: nothing happens

	s2 := receive(t, rec.started, wait, "second term")
	if s2.term.Epoch != 2 {
		t.Fatalf("second term at epoch %d, want 2 (every grant raises the epoch)", s2.term.Epoch)
	}
	// A request bound to the first term is not sent in the second.
	client := writeClient(t, e)
	if _, _, err := write(context.WithoutCancel(s1.ctx), g, client); !errors.Is(err, leader.ErrNotLeader) {
		t.Fatalf("write in the first term's context: %v, want ErrNotLeader", err)
	}
	if status, body, err := write(s2.ctx, g, client); err != nil || status != http.StatusCreated || body != "upstream saw Fencing-Epoch 2" {
		t.Fatalf("write in the second term: %d %q %v", status, body, err)
	}
	mustStop(t, stop)
	// Run may be called again once it returned.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.Run(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run again with a cancelled context: %v", err)
	}
}

func TestAPIKeys(t *testing.T) {
	const name = "jobs-1"
	g := newGateway(t, name, gatewayOptions{keys: []config.APIKey{
		{Name: "jobs", SHA256: fmt.Sprintf("%x", sha256.Sum256([]byte("s3cret"))), Leases: []string{"jobs-*"}},
	}})
	for _, tc := range []struct {
		key, name string
		status    int
	}{
		{"", name, http.StatusUnauthorized},
		{"wrong", name, http.StatusUnauthorized},
		{"s3cret", "reports", http.StatusForbidden},
	} {
		cfg := testConfig(t, g, tc.name, "node-a", nil)
		cfg.APIKey = tc.key
		e := mustNew(t, cfg)
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		err := e.Run(ctx)
		cancel()
		var ae *leader.APIError
		if !errors.As(err, &ae) || ae.Status != tc.status || ae.Op != "acquire" {
			t.Fatalf("key %q lease %q: Run returned %v, want %d without retrying", tc.key, tc.name, err, tc.status)
		}
	}

	cfg, rec := nodeA(t, g, name)
	cfg.APIKey = "s3cret"
	_, stop, _ := lead(t, cfg, rec)
	awaitRenewal(t, rec)
	mustStop(t, stop)
}

func TestRunTwice(t *testing.T) {
	g := newGateway(t, "invoice-sweeper")
	cfg, rec := nodeA(t, g, "invoice-sweeper")
	e, stop, _ := lead(t, cfg, rec)
	if err := e.Run(context.Background()); !errors.Is(err, leader.ErrRunning) {
		t.Fatalf("second Run: %v, want ErrRunning", err)
	}
	stop()
}

// A lease name with characters that need escaping reaches the authority
// intact.
func TestLeaseNameEscaping(t *testing.T) {
	const name = "email:tenant/42 eu%"
	g := newGateway(t, name)
	cfg, rec := nodeA(t, g, name)
	_, stop, _ := lead(t, cfg, rec)
	awaitRenewal(t, rec)
	if st := g.lease(t, name); st.Name != name || st.Holder != "node-a" || !st.Held {
		t.Fatalf("lease %+v", st)
	}
	stop()
}
