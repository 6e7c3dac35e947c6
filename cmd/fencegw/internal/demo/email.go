package demo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/fencegw/fencegw/gateway"
)

// email is one email the email API sent.
type email struct {
	at      time.Time
	epoch   int64 // the Fencing-Epoch the gateway admitted it at
	invoice string
	sender  string
	traceID string
}

// emailAPI is the sample upstream: an email API that cannot check fencing
// tokens. It prints every email it sends, with the epoch the gateway
// admitted it at.
type emailAPI struct {
	n      *narrator
	url    string
	srv    *http.Server
	served chan error

	mu     sync.Mutex
	emails []email
}

// startEmailAPI serves the email API on an ephemeral port of 127.0.0.1.
func startEmailAPI(n *narrator) (*emailAPI, error) {
	ln, err := listen()
	if err != nil {
		return nil, err
	}
	e := &emailAPI{n: n, url: "http://" + ln.Addr().String(), served: make(chan error, 1)}
	e.srv = &http.Server{Handler: http.HandlerFunc(e.send), ReadHeaderTimeout: callTimeout}
	go func() { e.served <- e.srv.Serve(ln) }()
	return e, nil
}

// send is POST /email/send: to, invoice and sender as a form.
func (e *emailAPI) send(rw http.ResponseWriter, r *http.Request) {
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
	m := email{at: time.Now(), epoch: epoch, invoice: r.PostForm.Get("invoice"), sender: r.PostForm.Get("sender"),
		traceID: trace.SpanContextFromContext(tctx).TraceID().String()}
	e.mu.Lock()
	e.emails = append(e.emails, m)
	id := len(e.emails)
	e.mu.Unlock()
	e.n.say("email", "email #%d sent: reminder for %s to %s from %s (Fencing-Epoch %d, trace %s)",
		id, m.invoice, r.PostForm.Get("to"), m.sender, m.epoch, m.traceID)
	rw.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(rw, "{\"id\":%d,\"status\":\"sent\"}\n", id)
}

// sent returns a copy of the emails sent so far.
func (e *emailAPI) sent() []email {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]email(nil), e.emails...)
}

// close stops the email API.
func (e *emailAPI) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := e.srv.Shutdown(ctx)
	if err != nil {
		e.srv.Close()
		err = fmt.Errorf("shut down the email API: %w", err)
	}
	if serr := <-e.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, fmt.Errorf("serve the email API: %w", serr))
	}
	return err
}

// isTraceID reports whether s is a valid W3C trace id.
func isTraceID(s string) bool {
	id, err := trace.TraceIDFromHex(s)
	return err == nil && id.IsValid()
}
