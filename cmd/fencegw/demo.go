package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/leader"
	"github.com/fencegw/fencegw/server"
	"github.com/fencegw/fencegw/telemetry"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/boltstore"
	"github.com/fencegw/fencegw/tokens/signed"
)

// The demo's timings: the seed article's 15 s lease, 10 s renew deadline
// and 2 s retry period, scaled down so that the story takes seconds.
const (
	demoLease         = 3 * time.Second
	demoRenewDeadline = 2 * time.Second
	demoRetry         = 500 * time.Millisecond
	// demoOversleep is how long node-a stays frozen after node-b's grant.
	demoOversleep = 500 * time.Millisecond
	// demoCallTimeout bounds every HTTP call the demo makes.
	demoCallTimeout = 3 * time.Second
	// demoDeadline bounds the whole story; it normally takes about 5 s.
	demoDeadline = 20 * time.Second

	demoResource  = "invoice-sweeper"
	demoRecipient = "billing@acme.example"
)

// demo tells the seed article's story: node-a leads and writes, freezes,
// node-b takes over with a higher epoch, node-a wakes and its write is
// refused with 412. Everything runs in this process on 127.0.0.1: an
// embedded store in a temporary directory, a sample email API, and the
// gateway's proxy and control API. It exits 0 when the story went as told,
// and 1 naming the step that did not.
func demo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fencegw demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quiet := fs.Bool("quiet", false, "print only the closing summary line")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: fencegw demo [--quiet]\n\n"+
			"Runs a stale leader's story in this process, with no services and no set-up: an embedded\n"+
			"store, a sample email API and the gateway, all on 127.0.0.1. Exits 0 when every step\n"+
			"behaves as told, 1 otherwise.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fencegw demo: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	n := &demoNarrator{w: stdout, start: time.Now(), quiet: *quiet}
	sctx, cancel := context.WithTimeout(ctx, demoDeadline)
	defer cancel()
	w, err := startDemoWorld(sctx, n)
	if err == nil {
		err = w.story(sctx)
		err = errors.Join(err, w.close())
	}
	switch {
	case err == nil:
		return 0
	case ctx.Err() != nil:
		fmt.Fprintf(stderr, "fencegw demo: interrupted at %s\n", n.stamp(time.Now()))
	default:
		fmt.Fprintf(stderr, "fencegw demo: FAILED at %s: %v\n", n.stamp(time.Now()), err)
	}
	return 1
}

// demoNarrator prints the story's lines, each stamped with the time since the
// demo began. Lines come from several goroutines (the email API prints its
// own).
type demoNarrator struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	quiet bool
}

func (n *demoNarrator) stamp(t time.Time) string {
	return fmt.Sprintf("t=%.1fs", t.Sub(n.start).Seconds())
}

// say prints one line of the narrative, unless quiet.
func (n *demoNarrator) say(who, format string, args ...any) {
	if n.quiet {
		return
	}
	n.print(who, format, args...)
}

// print prints one line, quiet or not.
func (n *demoNarrator) print(who, format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintf(n.w, "%-7s %-8s %s\n", n.stamp(time.Now()), who, fmt.Sprintf(format, args...))
}

// demoEmail is one email the email API delivered.
type demoEmail struct {
	at      time.Time
	epoch   int64
	invoice string
	sender  string
	traceID string
}

// demoWorld is everything the story runs against: the store, the gateway,
// the email API, and the client of node-a and the narrator.
type demoWorld struct {
	n   *demoNarrator
	dir string

	store *boltstore.Store
	tel   *telemetry.Telemetry
	auth  *signed.Authority
	gw    *server.Server

	servers   []*http.Server
	served    sync.WaitGroup
	serveErrs chan error

	transports []*http.Transport
	client     *http.Client // node-a's and the demoNarrator's calls

	proxyURL, apiURL, emailURL string

	mu     sync.Mutex
	emails []demoEmail
}

// startDemoWorld starts the store, the email API, the gateway's proxy and
// control API. close stops them and removes the store.
func startDemoWorld(ctx context.Context, n *demoNarrator) (w *demoWorld, err error) {
	w = &demoWorld{n: n, serveErrs: make(chan error, 3)}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("set-up: %w", err), w.close())
			w = nil
		}
	}()
	if w.dir, err = os.MkdirTemp("", "fencegw-demo-"); err != nil {
		return w, err
	}
	if w.store, err = boltstore.Open(filepath.Join(w.dir, "fencegw.db")); err != nil {
		return w, err
	}
	// No OTEL_* variables: nothing is exported and nothing is sampled, yet
	// every span has a trace id, which problems and the audit report.
	if w.tel, err = telemetry.Setup(ctx, telemetry.Options{ServiceVersion: version,
		Getenv: func(string) string { return "" }}); err != nil {
		return w, err
	}
	c := config.Default()
	key, err := signed.GenerateKey(signed.AlgEdDSA)
	if err != nil {
		return w, err
	}
	if w.auth, err = demoAuthority(key, c.Signing); err != nil {
		return w, err
	}

	emailLn, err := demoListen()
	if err != nil {
		return w, err
	}
	w.emailURL = "http://" + emailLn.Addr().String()
	w.serve(&http.Server{Handler: http.HandlerFunc(w.emailAPI), ReadHeaderTimeout: demoCallTimeout}, emailLn)

	c.Routes = []config.Route{{Prefix: "/email/", Upstream: w.emailURL, Tokens: config.TokensSigned, Resource: demoResource}}
	c.UpstreamDialTimeout, c.UpstreamResponseHeaderTimeout, c.UpstreamTimeout = config.Duration(demoCallTimeout),
		config.Duration(demoCallTimeout), config.Duration(demoCallTimeout)
	c.Telemetry.AuditSize = 64
	if w.gw, err = server.New(ctx, c, server.Options{Logger: slog.New(slog.DiscardHandler), Telemetry: w.tel,
		Store: w.store, Authority: w.auth}); err != nil {
		return w, err
	}
	log := slog.New(slog.DiscardHandler)
	proxy, api := w.gw.Proxy(), w.gw.Control()

	proxyLn, err := demoListen()
	if err != nil {
		return w, err
	}
	w.proxyURL = "http://" + proxyLn.Addr().String()
	w.serve(&http.Server{Handler: proxy, ReadHeaderTimeout: demoCallTimeout, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}, proxyLn)
	apiLn, err := demoListen()
	if err != nil {
		return w, err
	}
	w.apiURL = "http://" + apiLn.Addr().String()
	w.serve(&http.Server{Handler: api, ReadHeaderTimeout: demoCallTimeout, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}, apiLn)

	w.client = &http.Client{Transport: w.newTransport(), Timeout: demoCallTimeout}
	return w, nil
}

// demoAuthority is a token authority with key alone, kept nowhere.
func demoAuthority(key *signed.Key, s config.Signing) (*signed.Authority, error) {
	ring, err := signed.NewKeyring(key)
	if err != nil {
		return nil, err
	}
	v, err := signed.NewVerifier(ring, s.Issuer, s.Audience)
	if err != nil {
		return nil, err
	}
	signer, err := signed.NewSigner(ring, s.Issuer, s.Audience, s.TokenLifetime.D())
	if err != nil {
		return nil, err
	}
	return &signed.Authority{Keys: ring, Signer: signer, Verifier: v}, nil
}

// demoListen listens on an ephemeral port of 127.0.0.1, and nowhere
// else.
func demoListen() (net.Listener, error) {
	return net.Listen("tcp", "127.0.0.1:0")
}

// serve runs s on ln until close.
func (w *demoWorld) serve(s *http.Server, ln net.Listener) {
	w.servers = append(w.servers, s)
	w.served.Add(1)
	go func() {
		defer w.served.Done()
		if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			w.serveErrs <- err
		}
	}()
}

// newTransport returns a client transport of its own, whose connections
// close shuts.
func (w *demoWorld) newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // 127.0.0.1 only, whatever HTTP_PROXY says
	w.transports = append(w.transports, t)
	return t
}

// close stops the servers, closes every connection and the store, and
// removes the store's directory. It leaves no goroutine running.
func (w *demoWorld) close() error {
	var errs []error
	for _, t := range w.transports {
		t.CloseIdleConnections()
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range w.servers {
		if err := s.Shutdown(sctx); err != nil {
			errs = append(errs, fmt.Errorf("shut down a server: %w", err))
			s.Close()
		}
	}
	w.served.Wait()
	close(w.serveErrs)
	for err := range w.serveErrs {
		errs = append(errs, fmt.Errorf("serve: %w", err))
	}
	if w.gw != nil {
		errs = append(errs, w.gw.Close())
	}
	for _, t := range w.transports {
		t.CloseIdleConnections()
	}
	if w.tel != nil {
		if err := w.tel.Shutdown(sctx); err != nil {
			errs = append(errs, err)
		}
	}
	if w.store != nil {
		if err := w.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close the store: %w", err))
		}
	}
	if w.dir != "" {
		if err := os.RemoveAll(w.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", w.dir, err))
		}
	}
	return errors.Join(errs...)
}

// emailAPI is the sample upstream: an email API that cannot check fencing
// tokens. It prints every email it sends, with the epoch the gateway
// admitted it at.
func (w *demoWorld) emailAPI(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/email/send" {
		http.Error(rw, "not found", http.StatusNotFound)
		return
	}
	r.Body = http.MaxBytesReader(rw, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	epoch, _ := strconv.ParseInt(r.Header.Get(gateway.EpochHeader), 10, 64)
	tctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	e := demoEmail{at: time.Now(), epoch: epoch, invoice: r.PostForm.Get("invoice"), sender: r.PostForm.Get("sender"),
		traceID: trace.SpanContextFromContext(tctx).TraceID().String()}
	w.mu.Lock()
	w.emails = append(w.emails, e)
	id := len(w.emails)
	w.mu.Unlock()
	w.n.say("email", "email #%d sent: reminder for %s to %s from %s (Fencing-Epoch %d, trace %s)",
		id, e.invoice, r.PostForm.Get("to"), e.sender, e.epoch, e.traceID)
	rw.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(rw, "{\"id\":%d,\"status\":\"sent\"}\n", id)
}

// delivered returns a copy of the emails sent so far.
func (w *demoWorld) delivered() []demoEmail {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]demoEmail(nil), w.emails...)
}

// demoAnswer is an HTTP answer the story looks at.
type demoAnswer struct {
	status  int
	body    []byte
	problem *gateway.Problem // a problem+json body
}

func (a demoAnswer) String() string {
	s := fmt.Sprintf("%d %s", a.status, http.StatusText(a.status))
	if a.problem != nil && a.problem.Detail != "" {
		s += ": " + a.problem.Detail
	} else if b := strings.TrimSpace(string(a.body)); b != "" {
		s += ": " + b[:min(len(b), 200)]
	}
	return s
}

// demoDo sends a request and reads the answer.
func demoDo(ctx context.Context, client *http.Client, method, target, contentType string, body []byte, header http.Header) (demoAnswer, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return demoAnswer{}, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := client.Do(req)
	if err != nil {
		return demoAnswer{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return demoAnswer{}, err
	}
	a := demoAnswer{status: resp.StatusCode, body: data}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == gateway.ProblemContentType {
		var p gateway.Problem
		if json.Unmarshal(data, &p) == nil {
			a.problem = &p
		}
	}
	return a, nil
}

// sendReminder posts one invoice reminder to the email API through the
// gateway. token is the Fencing-Token to send; empty when client's
// transport adds it (a leader.Elector's).
func (w *demoWorld) sendReminder(ctx context.Context, client *http.Client, token, invoice, sender string) (demoAnswer, error) {
	form := url.Values{"to": {demoRecipient}, "invoice": {invoice}, "sender": {sender}}
	h := http.Header{}
	if token != "" {
		h.Set(gateway.TokenHeader, token)
	}
	return demoDo(ctx, client, http.MethodPost, w.proxyURL+"/email/send", "application/x-www-form-urlencoded",
		[]byte(form.Encode()), h)
}

// getJSON reads a control API resource into out.
func (w *demoWorld) getJSON(ctx context.Context, path string, out any) error {
	a, err := demoDo(ctx, w.client, http.MethodGet, w.apiURL+path, "", nil, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	if a.status != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, a)
	}
	if err := json.Unmarshal(a.body, out); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

// demoIsTraceID reports whether s is a valid W3C trace id.
func demoIsTraceID(s string) bool {
	id, err := trace.TraceIDFromHex(s)
	return err == nil && id.IsValid()
}

// demoNodeB is node-b: a leader.Elector campaigning for the lease, whose work
// (one reminder) waits for the story's go-ahead.
type demoNodeB struct {
	granted chan leader.Term // the first term, when node-b starts leading
	firstNo chan demoAnswer  // node-b's first refused acquire
	write   chan struct{}    // closed: node-b may send its reminder
	written chan error       // the outcome of node-b's reminder
	once    sync.Once        // node-b sends its reminder once, in its first term

	cancel context.CancelFunc // ends Run
	done   chan struct{}      // closed when Run returned
	err    error              // Run's result, set before done is closed
}

// startNodeB starts node-b's Elector.
func (w *demoWorld) startNodeB(ctx context.Context) (*demoNodeB, error) {
	b := &demoNodeB{granted: make(chan leader.Term, 1), firstNo: make(chan demoAnswer, 1), write: make(chan struct{}),
		written: make(chan error, 1), done: make(chan struct{})}
	writer := &http.Client{Timeout: demoCallTimeout} // its Transport fences with node-b's term
	e, err := leader.New(leader.Config{
		Endpoint:        w.apiURL,
		Name:            demoResource,
		Holder:          "node-b",
		LeaseDuration:   demoLease,
		RenewDeadline:   demoRenewDeadline,
		RetryPeriod:     demoRetry,
		HTTPClient:      &http.Client{Transport: &demoFirstRefusal{base: w.newTransport(), out: b.firstNo}, Timeout: demoRetry},
		ReleaseOnCancel: true,
		Logger:          slog.New(slog.DiscardHandler),
		Callbacks: leader.Callbacks{
			OnStartedLeading: func(ctx context.Context, term leader.Term) {
				b.once.Do(func() { b.work(ctx, w, writer, term) })
				<-ctx.Done()
			},
		},
	})
	if err != nil {
		return nil, err
	}
	writer.Transport = e.Transport(w.newTransport())
	rctx, cancel := context.WithCancel(ctx)
	b.cancel = cancel
	go func() {
		defer close(b.done)
		b.err = e.Run(rctx)
	}()
	return b, nil
}

// work is node-b's first term: it reports the grant, waits for the
// go-ahead, and sends the reminder node-a could not.
func (b *demoNodeB) work(ctx context.Context, w *demoWorld, writer *http.Client, term leader.Term) {
	b.granted <- term
	select {
	case <-b.write:
	case <-ctx.Done():
		b.written <- errors.New("stopped leading before sending its reminder")
		return
	}
	a, err := w.sendReminder(ctx, writer, "", "INV-1002", "node-b")
	if err == nil && a.status != http.StatusOK {
		err = fmt.Errorf("reminder at epoch %d: %s", term.Epoch, a)
	}
	b.written <- err
}

// stop ends node-b's campaign (releasing the lease if it leads) and waits
// for its Run to return. It may be called more than once.
func (b *demoNodeB) stop() error {
	b.cancel()
	<-b.done
	if b.err != nil && !errors.Is(b.err, context.Canceled) {
		return fmt.Errorf("node-b: %w", b.err)
	}
	return nil
}

// demoFirstRefusal is node-b's control API transport: it passes the first
// refused acquire (a 409: the lease is held) to out, for the narrative.
type demoFirstRefusal struct {
	base http.RoundTripper
	out  chan demoAnswer
	once sync.Once
}

func (f *demoFirstRefusal) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := f.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusConflict || !strings.HasSuffix(req.URL.Path, "/acquire") {
		return resp, err
	}
	f.once.Do(func() {
		data, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(data))
		if rerr != nil {
			return
		}
		a := demoAnswer{status: resp.StatusCode, body: data}
		var p gateway.Problem
		if json.Unmarshal(data, &p) == nil {
			a.problem = &p
		}
		f.out <- a
	})
	return resp, nil
}

// story runs the seed article's timeline and checks every step.
func (w *demoWorld) story(ctx context.Context) error {
	n := w.n
	n.say("demo", "a stale leader, fenced: the seed article's timeline in seconds (lease %s, renew deadline %s, retry %s)",
		demoLease, demoRenewDeadline, demoRetry)
	n.say("demo", "email API %s, gateway %s, control API %s", w.emailURL, w.proxyURL, w.apiURL)
	n.say("demo", "embedded store in %s; signed route /email/ for resource %q; a fresh Ed25519 key",
		w.dir, demoResource)

	// t=0: node-a acquires the lease.
	acquired := time.Now()
	leaseA, err := w.leaseCall(ctx, "acquire", map[string]any{"holder": "node-a", "ttl_seconds": demoLease.Seconds()})
	if err != nil {
		return fmt.Errorf("node-a: %w", err)
	}
	if leaseA.Holder != "node-a" || leaseA.Epoch != 1 || leaseA.Token == "" {
		return fmt.Errorf("node-a: acquire: want holder node-a at epoch 1 with a token, got holder %q at epoch %d",
			leaseA.Holder, leaseA.Epoch)
	}
	n.say("node-a", "POST /v1/leases/%s/acquire -> 200 OK: leader at epoch %d, with a signed token", demoResource, leaseA.Epoch)

	// node-b campaigns from the start; it is refused while node-a's lease
	// runs.
	b, err := w.startNodeB(ctx)
	if err != nil {
		return fmt.Errorf("node-b: %w", err)
	}
	defer b.stop() // after a failed step; a second stop is harmless
	select {
	case no := <-b.firstNo:
		if no.problem == nil || no.problem.Type != gateway.TypeLeaseHeld || no.problem.Holder != "node-a" ||
			no.problem.CurrentEpoch == nil {
			return fmt.Errorf("node-b: first acquire: want 409 lease-held by node-a, got %s", no)
		}
		n.say("node-b", "POST /v1/leases/%s/acquire -> 409 Conflict: held by node-a at epoch %d; node-b retries every %s",
			demoResource, *no.problem.CurrentEpoch, demoRetry)
	case t := <-b.granted:
		return fmt.Errorf("node-b: granted epoch %d while node-a's lease ran", t.Epoch)
	case <-b.done:
		return fmt.Errorf("node-b: stopped campaigning: %v", b.err)
	case <-ctx.Done():
		return fmt.Errorf("node-b: no answer to its first acquire: %w", ctx.Err())
	}

	// node-a sends its first reminder.
	a, err := w.sendReminder(ctx, w.client, leaseA.Token, "INV-1001", "node-a")
	if err != nil {
		return fmt.Errorf("node-a: first reminder: %w", err)
	}
	if a.status != http.StatusOK {
		return fmt.Errorf("node-a: first reminder at epoch 1: want 200 from the email API, got %s", a)
	}
	if got := w.delivered(); len(got) != 1 || got[0].epoch != 1 || !demoIsTraceID(got[0].traceID) {
		return fmt.Errorf("node-a: first reminder: the email API should have one email, at epoch 1, with a trace id; has %+v", got)
	}
	n.say("node-a", "POST /email/send (INV-1001) with its epoch 1 token -> 200 OK")

	// t=1: node-a renews, as a leader does every lease/3; the epoch stays.
	if !demoSleep(ctx, time.Until(acquired.Add(demoLease/3))) {
		return ctx.Err()
	}
	renewed := time.Now()
	leaseA, err = w.leaseCall(ctx, "renew", map[string]any{"holder": "node-a", "epoch": leaseA.Epoch})
	if err != nil {
		return fmt.Errorf("node-a: %w", err)
	}
	if leaseA.Holder != "node-a" || leaseA.Epoch != 1 || leaseA.Token == "" {
		return fmt.Errorf("node-a: renew: want holder node-a at epoch 1 with a token, got holder %q at epoch %d",
			leaseA.Holder, leaseA.Epoch)
	}
	leaseEnds := renewed.Add(demoLease) // no earlier than this on the authority's clock
	n.say("node-a", "POST /v1/leases/%s/renew -> 200 OK: still epoch %d, lease runs to about %s",
		demoResource, leaseA.Epoch, n.stamp(leaseEnds))

	// node-a freezes with its next write in hand: a goroutine blocked on a
	// channel. Nothing of node-a runs while it is frozen: no renewals, no
	// clock checks. When it wakes, it sends the write, and steps down if
	// the gateway answers 412.
	frozen := time.Now()
	wake := make(chan struct{})
	outcome := make(chan demoAnswer, 1)
	failed := make(chan error, 1)
	work, stepDown := context.WithCancel(ctx) // node-a's term: ends when it steps down
	var nodeA sync.WaitGroup
	defer nodeA.Wait()
	defer stepDown() // a failed story must not leave node-a frozen
	nodeA.Add(1)
	go func() {
		defer nodeA.Done()
		select {
		case <-wake:
		case <-work.Done():
			failed <- work.Err()
			return
		}
		a, err := w.sendReminder(work, w.client, leaseA.Token, "INV-1002", "node-a")
		if err != nil {
			failed <- err
			return
		}
		if a.status == http.StatusPreconditionFailed {
			stepDown() // a newer epoch was granted: stop leading, as leader.Elector's Transport does
		}
		outcome <- a
	}()
	n.say("node-a", "freezes (a stop-the-world pause) as it is about to send INV-1002: no more renewals")

	// The lease lapses; node-b takes over with epoch 2.
	var termB leader.Term
	select {
	case termB = <-b.granted:
	case <-b.done:
		return fmt.Errorf("node-b: stopped campaigning: %v", b.err)
	case <-ctx.Done():
		return fmt.Errorf("node-b: not granted the lease after node-a's expired: %w", ctx.Err())
	}
	takeover := time.Now()
	if takeover.Before(leaseEnds) {
		return fmt.Errorf("node-b: granted the lease %s before node-a's could have expired", leaseEnds.Sub(takeover))
	}
	if termB.Epoch != 2 || termB.Token == "" {
		return fmt.Errorf("node-b: takeover: want epoch 2 with a token, got epoch %d", termB.Epoch)
	}
	n.say("node-b", "node-a's lease expired: acquire -> 200 OK, node-b leads at epoch %d", termB.Epoch)
	var fence gateway.FenceState
	if err := w.getJSON(ctx, "/v1/fences/"+demoResource, &fence); err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	if fence.Epoch != 2 {
		return fmt.Errorf("gateway: the fence of %q is at epoch %d after node-b's grant, want 2", demoResource, fence.Epoch)
	}
	n.say("gateway", "GET /v1/fences/%s -> epoch %d: node-a is fenced before node-b writes anything (fence on grant)",
		demoResource, fence.Epoch)

	// node-a wakes and sends the write it was holding, with epoch 1.
	if !demoSleep(ctx, demoOversleep) {
		return ctx.Err()
	}
	before := len(w.delivered())
	n.say("node-a", "wakes after a %.1fs pause, sure it still leads at epoch 1, and sends INV-1002",
		time.Since(frozen).Seconds())
	close(wake)
	var refused demoAnswer
	select {
	case refused = <-outcome:
	case err := <-failed:
		return fmt.Errorf("node-a: stale write: %w", err)
	}
	p := refused.problem
	if refused.status != http.StatusPreconditionFailed || p == nil || p.Type != gateway.TypeStaleEpoch ||
		p.PresentedEpoch == nil || p.CurrentEpoch == nil {
		return fmt.Errorf("node-a: stale write at epoch 1: want 412 stale-epoch, got %s", refused)
	}
	if *p.PresentedEpoch != 1 || *p.CurrentEpoch != 2 || !demoIsTraceID(p.TraceID) {
		return fmt.Errorf("node-a: stale write: want presented epoch 1, current epoch 2 and a trace id, got %d, %d, %q",
			*p.PresentedEpoch, *p.CurrentEpoch, p.TraceID)
	}
	if got := w.delivered(); len(got) != before {
		return fmt.Errorf("email API: node-a's refused write reached it: %+v", got[before:])
	}
	n.say("node-a", "POST /email/send (INV-1002) with epoch 1 -> %d %s: presented epoch %d, current epoch %d, trace_id %s",
		refused.status, http.StatusText(refused.status), *p.PresentedEpoch, *p.CurrentEpoch, p.TraceID)
	var audit gateway.Rejections
	if err := w.getJSON(ctx, "/v1/audit/rejections?resource="+demoResource, &audit); err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	if len(audit.Rejections) != 1 || audit.Rejections[0].TraceID != p.TraceID || audit.Rejections[0].Decision != tokens.DecisionStale {
		return fmt.Errorf("gateway: the audit should list the one stale write, of trace %s; it lists %+v", p.TraceID, audit.Rejections)
	}
	n.say("gateway", "the email API never saw it; GET /v1/audit/rejections lists it: decision stale, trace %s", p.TraceID)

	// node-a stepped down on the 412.
	nodeA.Wait()
	if work.Err() == nil {
		return errors.New("node-a: did not step down on the 412")
	}
	n.say("node-a", "steps down on the 412 (a newer epoch exists): it ends its sweep and leaves INV-1002 to the leader")

	// node-b sends the reminder node-a could not.
	close(b.write)
	select {
	case err := <-b.written:
		if err != nil {
			return fmt.Errorf("node-b: %w", err)
		}
	case <-ctx.Done():
		return fmt.Errorf("node-b: reminder: %w", ctx.Err())
	}
	n.say("node-b", "POST /email/send (INV-1002) through its leader.Elector's Transport, epoch 2 token -> 200 OK")
	if err := b.stop(); err != nil {
		return err
	}

	// The email API's view: every email, and none from node-a after the
	// takeover.
	got := w.delivered()
	fromA := 0
	for _, e := range got {
		switch {
		case e.sender == "node-a" && (e.epoch != 1 || !e.at.Before(takeover)):
			return fmt.Errorf("email API: an email from node-a at epoch %d arrived after the takeover", e.epoch)
		case e.sender == "node-a":
			fromA++
		case e.epoch != 2:
			return fmt.Errorf("email API: an email from %s at epoch %d, want 2", e.sender, e.epoch)
		}
	}
	if len(got) != 2 || fromA != 1 {
		return fmt.Errorf("email API: want 2 emails, one from each node, got %+v", got)
	}
	n.print("summary", "the email API received %d emails (epochs %d and %d), none from node-a after the takeover at %s",
		len(got), got[0].epoch, got[1].epoch, n.stamp(takeover))
	return nil
}

// leaseCall calls a lease endpoint for node-a and returns the lease.
func (w *demoWorld) leaseCall(ctx context.Context, op string, body map[string]any) (gateway.LeaseState, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return gateway.LeaseState{}, err
	}
	path := "/v1/leases/" + demoResource + "/" + op
	a, err := demoDo(ctx, w.client, http.MethodPost, w.apiURL+path, "application/json", data, nil)
	if err != nil {
		return gateway.LeaseState{}, fmt.Errorf("%s: %w", op, err)
	}
	var l gateway.LeaseState
	if a.status != http.StatusOK || json.Unmarshal(a.body, &l) != nil {
		return gateway.LeaseState{}, fmt.Errorf("%s: want 200 with the lease, got %s", op, a)
	}
	return l, nil
}

// demoSleep waits for d or ctx, reporting whether d passed.
func demoSleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
