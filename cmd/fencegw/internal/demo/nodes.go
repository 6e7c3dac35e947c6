package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/fencegw/fencegw/wire"

	"github.com/fencegw/fencegw/cmd/fencegw/internal/apiclient"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/leader"
)

// sendReminder posts one invoice reminder to the email API through the
// gateway. token is the Fencing-Token to send; empty when client's
// transport adds it (a leader.Elector's).
func (w *world) sendReminder(ctx context.Context, client *http.Client, token, invoice, sender string) (apiclient.Answer, error) {
	form := url.Values{"to": {recipient}, "invoice": {invoice}, "sender": {sender}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.proxyURL+"/email/send", strings.NewReader(form.Encode()))
	if err != nil {
		return apiclient.Answer{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if token != "" {
		req.Header.Set(gateway.TokenHeader, token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return apiclient.Answer{}, err
	}
	return apiclient.ReadAnswer(resp)
}

// nodeA is node-a: a leader that calls the lease API itself, with the
// client `fencegw lease` uses, and writes with its lease's token. Frozen,
// nothing of it runs: no renewals, no clock checks.
type nodeA struct {
	w      *world
	writer *http.Client
	lease  wire.LeaseState // as last granted or renewed

	wake     chan struct{}      // closed: node-a wakes from its freeze
	outcome  chan writeOutcome  // the answer to the write it held
	term     context.Context    // node-a's term while frozen: ends when it steps down
	stepDown context.CancelFunc // ends term
	running  sync.WaitGroup
}

type writeOutcome struct {
	answer apiclient.Answer
	err    error
}

func newNodeA(w *world) *nodeA {
	return &nodeA{w: w, writer: &http.Client{Transport: w.newTransport(), Timeout: callTimeout}}
}

// call acquires or renews the lease.
func (a *nodeA) call(ctx context.Context, op string) error {
	l, err := a.w.api.LeaseState(ctx, op, resource, apiclient.LeaseRequest{Holder: "node-a", TTL: leaseDuration,
		Epoch: int64(a.lease.Epoch)})
	if err != nil {
		return fmt.Errorf("node-a: %w", err)
	}
	if l.Holder != "node-a" || l.Epoch != 1 || l.Token == "" {
		return fmt.Errorf("node-a: %s: want holder node-a at epoch 1 with a token, got holder %q at epoch %d",
			op, l.Holder, l.Epoch)
	}
	a.lease = l
	return nil
}

// send sends a reminder with node-a's token.
func (a *nodeA) send(ctx context.Context, invoice string) (apiclient.Answer, error) {
	return a.w.sendReminder(ctx, a.writer, a.lease.Token, invoice, "node-a")
}

// freeze freezes node-a with its next write, INV-1002, in hand: a
// goroutine blocked until wakeUp. Then it sends the write, and steps down
// if the gateway answers 412.
func (a *nodeA) freeze(ctx context.Context) {
	a.wake, a.outcome = make(chan struct{}), make(chan writeOutcome, 1)
	a.term, a.stepDown = context.WithCancel(ctx)
	a.running.Add(1)
	go func() {
		defer a.running.Done()
		select {
		case <-a.wake:
		case <-a.term.Done():
			a.outcome <- writeOutcome{err: a.term.Err()}
			return
		}
		ans, err := a.send(a.term, "INV-1002")
		if err == nil && ans.Status == http.StatusPreconditionFailed {
			a.stepDown() // a newer epoch was granted: stop leading, as leader.Elector's Transport does
		}
		a.outcome <- writeOutcome{ans, err}
	}()
}

// wakeUp wakes node-a and returns the answer to the write it held.
func (a *nodeA) wakeUp() (apiclient.Answer, error) {
	close(a.wake)
	o := <-a.outcome
	return o.answer, o.err
}

// steppedDown waits for node-a's work to end and reports whether it
// stepped down.
func (a *nodeA) steppedDown() bool {
	a.running.Wait()
	return a.term.Err() != nil
}

// stop ends node-a's term, if frozen (a failed story must not leave it
// so), and waits for it.
func (a *nodeA) stop() {
	if a.stepDown != nil {
		a.stepDown()
	}
	a.running.Wait()
}

// nodeB is node-b: a leader.Elector campaigning for the lease, whose work
// (one reminder) waits for the story's go-ahead.
type nodeB struct {
	granted chan leader.Term      // the first term, when node-b starts leading
	firstNo chan apiclient.Answer // node-b's first refused acquire
	write   chan struct{}         // closed: node-b may send its reminder
	written chan error            // the outcome of node-b's reminder
	once    sync.Once             // node-b sends its reminder once, in its first term

	cancel context.CancelFunc // ends Run
	done   chan struct{}      // closed when Run returned
	err    error              // Run's result, set before done is closed
}

// startNodeB starts node-b's Elector.
func startNodeB(ctx context.Context, w *world) (*nodeB, error) {
	b := &nodeB{granted: make(chan leader.Term, 1), firstNo: make(chan apiclient.Answer, 1), write: make(chan struct{}),
		written: make(chan error, 1), done: make(chan struct{})}
	writer := &http.Client{Timeout: callTimeout} // its Transport fences with node-b's term
	e, err := leader.New(leader.Config{
		Endpoint:        w.apiURL,
		Name:            resource,
		Holder:          "node-b",
		LeaseDuration:   leaseDuration,
		RenewDeadline:   renewDeadline,
		RetryPeriod:     retryPeriod,
		HTTPClient:      &http.Client{Transport: &firstRefusal{base: w.newTransport(), out: b.firstNo}, Timeout: retryPeriod},
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
func (b *nodeB) work(ctx context.Context, w *world, writer *http.Client, term leader.Term) {
	b.granted <- term
	select {
	case <-b.write:
	case <-ctx.Done():
		b.written <- errors.New("stopped leading before sending its reminder")
		return
	}
	a, err := w.sendReminder(ctx, writer, "", "INV-1002", "node-b")
	if err == nil && a.Status != http.StatusOK {
		err = fmt.Errorf("reminder at epoch %d: %s", term.Epoch, a)
	}
	b.written <- err
}

// stop ends node-b's campaign (releasing the lease if it leads) and waits
// for its Run to return. It may be called more than once.
func (b *nodeB) stop() error {
	b.cancel()
	<-b.done
	if b.err != nil && !errors.Is(b.err, context.Canceled) {
		return fmt.Errorf("node-b: %w", b.err)
	}
	return nil
}

// firstRefusal is node-b's control API transport: it passes the first
// refused acquire (a 409: the lease is held) to out, for the narrative.
type firstRefusal struct {
	base http.RoundTripper
	out  chan apiclient.Answer
	once sync.Once
}

func (f *firstRefusal) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := f.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusConflict || !strings.HasSuffix(req.URL.Path, "/acquire") {
		return resp, err
	}
	f.once.Do(func() {
		a, rerr := apiclient.ReadAnswer(resp) // closes the body: Elector reads the copy
		resp.Body = io.NopCloser(bytes.NewReader(a.Body))
		if rerr == nil {
			f.out <- a
		}
	})
	return resp, nil
}
