package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"time"

	"github.com/fencegw/fencegw/gateway/observe"
	"github.com/fencegw/fencegw/gateway/problem"
	"github.com/fencegw/fencegw/gateway/reqctx"

	"github.com/fencegw/fencegw/tokens"
)

// errDeliveryCut marks a write on a leased resource that was not delivered
// whole (acknowledged by the upstream's TCP) before its grant may have
// lapsed (Admission.DeliverBy): its body was cut and the upstream
// connection reset, so the upstream received none or part of it, never
// all.
var errDeliveryCut = errors.New("the lease lapsed before the write was delivered whole")

// errDeliveryUncertain marks a leased write whose deadline came while the
// upstream's TCP had not yet acknowledged its last bytes, all of which had
// left: its connection was reset, and the upstream may or may not have
// received the write whole. It is answered as an upstream failure whose
// outcome is unknown, never as a cut.
var errDeliveryUncertain = errors.New("the lease lapsed while the write's last bytes were unacknowledged: the upstream may have received all of it")

// ErrNothingSent joins errDeliveryCut when the cut came before any of the
// write was sent to the upstream.
var ErrNothingSent = errors.New("nothing of the write was sent")

// ErrCutUnsent is the error of a write cut before any of it was sent.
var ErrCutUnsent = fmt.Errorf("%w: %w", errDeliveryCut, ErrNothingSent)

// DeliverBy is when the request's admitted write must be delivered whole
// by; the zero Time when no lease bounds it.
func DeliverBy(ctx context.Context) time.Time {
	a, _ := reqctx.AdmissionFrom(ctx)
	return a.DeliverBy
}

// DeliverBeforeLapse is middleware for writes on leased resources: a write
// whose grant may have lapsed by now (see Admission.DeliverBy) is refused
// with 412 and nothing forwarded, and the client's body must arrive before
// that moment: reading it is cut then. The transports cut a write the
// upstream has not acknowledged whole by that moment (see Transport); the
// proxy answers a cut write with 412 as well. Both refusals are counted in
// obs's audit.
func DeliverBeforeLapse(obs *observe.Observer) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			a, ok := reqctx.AdmissionFrom(r.Context())
			if !ok || a.DeliverBy.IsZero() {
				next.ServeHTTP(w, r)
				return
			}
			if !time.Now().Before(a.DeliverBy) {
				writeLapsed(w, r, a, false, obs)
				return
			}
			by := a.DeliverBy
			if d, ok := r.Context().Deadline(); ok && d.Before(by) {
				by = d
			}
			// Not every ResponseWriter supports it (httptest recorders); the
			// transports still cut at DeliverBy.
			_ = http.NewResponseController(w).SetReadDeadline(by)
			next.ServeHTTP(w, r)
		})
	}
}

// cutAfter marks err, a failure to send the request, as a delivery cut
// when it came at or after by (a set DeliverBy).
func cutAfter(by time.Time, err error) error {
	if by.IsZero() || time.Now().Before(by) || errors.Is(err, errDeliveryCut) {
		return err
	}
	return fmt.Errorf("%w: %w", errDeliveryCut, err)
}

// uncertainAfter marks err, a failure after the whole request was sent,
// as an uncertain delivery when it came at or after by; a delivery cut
// reported by the wait on acknowledgements becomes uncertain too.
func uncertainAfter(by time.Time, err error) error {
	if errors.Is(err, errDeliveryCut) || !time.Now().Before(by) {
		return fmt.Errorf("%w: %v", errDeliveryUncertain, err)
	}
	return err
}

// RoundTripBefore sends req through rt, a transport whose connections this
// package does not hold (TLS and HTTP/2 upstreams, upgrades): when req's
// write must be delivered by a moment (see DeliverBy), it counts as
// delivered once written whole (httptrace's WroteRequest) and acknowledged
// whole by the upstream's TCP (see delivery); the response is returned
// only then. At the moment, a write not delivered is cut: its connection
// is reset and the exchange cancelled. Where acknowledgements cannot be
// read, written whole is delivered, and a write finished within
// microseconds of the moment may still be reported cut.
func RoundTripBefore(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
	by := DeliverBy(req.Context())
	if by.IsZero() {
		return rt.RoundTrip(req)
	}
	if !time.Now().Before(by) {
		closeBody(req)
		return nil, ErrCutUnsent
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	d := &delivery{by: by}
	ctx = httptrace.WithClientTrace(ctx, d.trace())
	req = req.WithContext(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = watchedBody{req.Body, d}
	} else {
		d.bodyRead = true
	}
	timer := time.AfterFunc(time.Until(by), func() {
		switch d.check() {
		case deliveryCut:
			cancel(errDeliveryCut)
		case deliveryUncertain:
			cancel(errDeliveryUncertain)
		}
	})
	resp, err := rt.RoundTrip(req)
	if err != nil {
		timer.Stop()
		cancel(nil)
		return nil, d.failed(by, err)
	}
	st, err := d.await(ctx)
	if err != nil {
		timer.Stop()
		resp.Body.Close()
		if st == deliveryPending {
			st = d.end()
		}
		switch st {
		case deliveryCut:
			cancel(errDeliveryCut)
			return nil, cutAfter(by, err)
		case deliveryUncertain:
			cancel(errDeliveryUncertain)
			return nil, uncertainAfter(by, err)
		}
		cancel(nil)
		return nil, err
	}
	if st != deliveryPending {
		timer.Stop()
	}
	// Otherwise the timer still cuts a write not written whole by then.
	// The response body reads under ctx: it is released when the
	// request's own context ends.
	return resp, nil
}

// failed classifies err, the failure of an exchange d followed: a cut
// write, one whose delivery is uncertain, or err as it is.
func (d *delivery) failed(by time.Time, err error) error {
	switch st := d.end(); {
	case st == deliveryUncertain:
		return uncertainAfter(by, err)
	case st == deliveryCut || !d.written():
		return cutAfter(by, err)
	}
	return err
}

// writeLapsed answers a write on a leased resource whose grant may have
// lapsed before it was delivered whole: 412, a stale epoch. forwarded says
// whether part of it had been sent. The refusal is counted in obs's audit.
func writeLapsed(w http.ResponseWriter, r *http.Request, a reqctx.Admission, forwarded bool, obs *observe.Observer) {
	how := "before the write was forwarded; nothing of it was sent"
	if forwarded {
		how = "before the write was delivered whole; the upstream connection was cut, and it did not receive all of it"
	}
	p := problem.Of(&tokens.StaleEpochError{Resource: a.Resource, Presented: a.Epoch, Current: a.Epoch,
		Reason: fmt.Sprintf("the lease granted at epoch %d ran out %s", a.Epoch, how)})
	if rt, ok := reqctx.RouteFrom(r.Context()); ok {
		p.Route = rt.Name
	}
	obs.AuditRefusal(r, a, &p)
	problem.Write(w, r, p)
}
