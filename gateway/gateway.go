package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/fencegw/fencegw/gateway/guard"
	"github.com/fencegw/fencegw/gateway/idempotency"
	"github.com/fencegw/fencegw/gateway/observe"
	"github.com/fencegw/fencegw/gateway/problem"
	"github.com/fencegw/fencegw/gateway/reqctx"
	"github.com/fencegw/fencegw/gateway/upstream"

	"github.com/fencegw/fencegw/tokens"
)

// Options assemble the proxy handler.
type Options struct {
	Routes    *Routes
	Fence     *tokens.Fence
	Transport http.RoundTripper // NewTransport's defaults when nil
	Logger    *slog.Logger      // slog.Default() when nil
	// MaxBodyBytes caps request bodies; 0 means no cap. A declared
	// Content-Length above it is refused with 413 before any fencing.
	MaxBodyBytes int64
	// Observer reports spans, metrics and the audit (none when nil).
	Observer *observe.Observer
	// UpstreamTimeout bounds a whole admitted exchange with the upstream,
	// reading the client's body included (0: unbounded; config.Default sets
	// 30s). It bounds how long
	// a write admitted at one epoch can still reach the upstream.
	UpstreamTimeout time.Duration
	// Idempotency tunes at-most-once writes (see Idempotency); its records
	// live in the Fence's store.
	Idempotency idempotency.Options
	// Refusals throttles the log lines of refused writes and failed
	// exchanges (a RefusalLog of its own over Logger when nil); share one
	// with the control API so that one cap holds for both.
	Refusals *observe.RefusalLog
}

// New returns the proxy handler: on connections of a guard listener (guard.NewListener) the
// answer to requests that broke framing (see guard.Guarded), then path check and
// route matching, the body limit, the fencing decision, the exchange
// deadline, at-most-once writes (Idempotency-Key), the drain of earlier
// epochs' writes, the delivery deadline of
// writes on leased resources, small bodies read whole, and the reverse
// proxy, in that order. Every method reaches the
// chain; routes decide which are fenced.
func New(o Options) http.Handler {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Transport == nil {
		o.Transport = upstream.NewTransport(upstream.TransportOptions{})
	}
	if o.Observer == nil {
		o.Observer = observe.MustObserver()
	}
	if o.Refusals == nil {
		o.Refusals = observe.NewRefusalLog(o.Logger, observe.RefusalLogOptions{})
	}
	o.Idempotency.Refusals = o.Refusals
	var h http.Handler = NewProxy(o.Observer.Transport(routeTransport{o.Transport}), o.Logger, o.Observer, o.Refusals)
	h = smallBodies(upstream.ErrorHandler(o.Logger, o.Observer, o.Refusals))(h)
	h = upstream.DeliverBeforeLapse(o.Observer)(h)
	h = DrainEarlierEpochs(o.Fence.Cached, o.Observer)(h)
	h = idempotency.Middleware(o.Fence.Store(), o.Idempotency, o.Observer, o.Logger)(h)
	if o.UpstreamTimeout > 0 {
		h = Deadline(o.UpstreamTimeout)(h)
	}
	h = Fencing(o.Fence, o.Routes, o.Observer, o.Refusals)(h)
	if o.MaxBodyBytes > 0 {
		h = LimitBody(o.MaxBodyBytes)(h)
	}
	h = MatchRoute(o.Routes)(h)
	return guard.Guarded(o.Logger, o.Refusals)(o.Observer.ServerHandler(h, "proxy"))
}

// Deadline is middleware that bounds an admitted write's whole exchange
// with the upstream, from admission until the upstream's answer has begun:
// the client's body must arrive and the upstream must answer within d, or
// the exchange is cut (504 when nothing was sent back yet). Without it a
// client trickling its body could deliver a write admitted at epoch E long
// after E+1 was admitted.
func Deadline(d time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, ok := reqctx.AdmissionFrom(r.Context()); !ok {
				next.ServeHTTP(w, r)
				return
			}
			deadline := time.Now().Add(d)
			// Not every ResponseWriter supports it (httptest recorders).
			_ = http.NewResponseController(w).SetReadDeadline(deadline)
			ctx, cancel := context.WithDeadline(r.Context(), deadline)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// LimitBody is middleware that refuses a request whose declared length
// exceeds max with 413, and cuts off a body that grows past max while
// streaming (the proxy then answers 413).
func LimitBody(max int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > max {
				problem.WriteError(w, r, problem.Refuse(problem.KindBodyTooLarge, fmt.Sprintf("the request body of %d bytes exceeds %d bytes", r.ContentLength, max)))
				return
			}
			if r.Body != nil && r.Body != http.NoBody {
				r.Body = http.MaxBytesReader(w, r.Body, max)
			}
			next.ServeHTTP(w, r)
		})
	}
}

// smallBodies is middleware that reads a body of known length up to
// SmallBodyMax before the proxy forwards the request, so its head and body
// reach the upstream in one write instead of two; larger bodies, and
// bodies of unknown length, stream. A body that cannot be read whole (the
// client went away, broke framing, was too slow) is answered by fail as
// the proxy would answer it, and nothing is forwarded.
func smallBodies(fail func(http.ResponseWriter, *http.Request, error)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength <= 0 || r.ContentLength > upstream.SmallBodyMax || r.Body == nil {
				next.ServeHTTP(w, r)
				return
			}
			b := make([]byte, r.ContentLength)
			if _, err := io.ReadFull(r.Body, b); err != nil {
				if by := upstream.DeliverBy(r.Context()); !by.IsZero() && !time.Now().Before(by) {
					err = fmt.Errorf("%w: %w", upstream.ErrCutUnsent, err)
				}
				if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
					err = fmt.Errorf("the client sent %d bytes less than its Content-Length: %w", len(b), err)
				}
				if ctxErr := r.Context().Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
					err = fmt.Errorf("%w: %w", ctxErr, err)
				}
				fail(w, r, err)
				return
			}
			// An in-memory body: net/http writes it with the head (rewrite
			// gives the proxy's outgoing request its own reader over b).
			r.Body = io.NopCloser(bytes.NewReader(b))
			if ex, ok := reqctx.ExchangeFrom(r.Context()); ok {
				ex.Body = b
			}
			next.ServeHTTP(w, r)
		})
	}
}
