package gateway

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/fencegw/fencegw/gateway/observe"
	"github.com/fencegw/fencegw/gateway/problem"
	"github.com/fencegw/fencegw/gateway/reqctx"
	"github.com/fencegw/fencegw/gateway/upstream"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// epochDrain keeps, per resource, the epochs of this replica's admitted writes
// that are on their way to the upstream, so that writes of different
// epochs to one resource never overlap there (see Drain).
type epochDrain struct {
	// cached is the HWM this replica holds for a resource (Fence.Cached):
	// raised by every admission here before the admitted write enters.
	cached func(resource string) int64

	mu  sync.Mutex
	res map[string]*drainResource // resources with writes in flight
}

// drainResource is one resource's writes in flight.
type drainResource struct {
	flights []epochFlights // usually one epoch
	// changed, when not nil, is closed when a write leaves; writes that
	// wait for lower epochs to leave make it.
	changed chan struct{}
}

type epochFlights struct {
	epoch int64
	n     int
}

func newEpochDrain(cached func(string) int64) *epochDrain {
	return &epochDrain{cached: cached, res: make(map[string]*drainResource)}
}

// enter registers a write at epoch to resource and waits until no write at
// a lower epoch is in flight. It returns a *tokens.StaleEpochError, and
// registers nothing, when a higher epoch was admitted here since this
// write's admission (a write of it may already be at the upstream), and
// ctx's error when ctx ends first. On success the caller must call leave
// once the write is answered or cut.
//
// Entering and checking happen under one lock, after the higher epoch's
// admission raised the cached HWM: either the lower write entered first,
// and the higher one waits for it, or it sees the higher epoch and is
// refused. (A resource evicted from the cache between a write's admission
// and its entry, while nothing of it was in flight, is the one case in
// which a lower write may still go after a higher one has finished; never
// while it is in flight.)
func (d *epochDrain) enter(ctx context.Context, resource string, epoch int64) error {
	d.mu.Lock()
	r := d.res[resource]
	if r == nil {
		r = &drainResource{}
		d.res[resource] = r
	}
	if h := max(r.highest(), d.cached(resource)); h > epoch {
		d.dropIfIdle(resource, r)
		d.mu.Unlock()
		return &tokens.StaleEpochError{Resource: resource, Presented: epoch, Current: h}
	}
	r.add(epoch, 1)
	for r.lowerThan(epoch) {
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		ch := r.changed
		d.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			d.leave(resource, epoch)
			return ctx.Err()
		}
		d.mu.Lock()
	}
	d.mu.Unlock()
	return nil
}

// leave ends a write that entered at epoch.
func (d *epochDrain) leave(resource string, epoch int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.res[resource]
	r.add(epoch, -1)
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
	d.dropIfIdle(resource, r)
}

// dropIfIdle forgets r once nothing of it is in flight. d.mu is held.
func (d *epochDrain) dropIfIdle(resource string, r *drainResource) {
	if len(r.flights) == 0 {
		delete(d.res, resource)
	}
}

// add changes the writes in flight at epoch by n.
func (r *drainResource) add(epoch int64, n int) {
	for i := range r.flights {
		if r.flights[i].epoch == epoch {
			r.flights[i].n += n
			if r.flights[i].n == 0 {
				r.flights = append(r.flights[:i], r.flights[i+1:]...)
			}
			return
		}
	}
	r.flights = append(r.flights, epochFlights{epoch: epoch, n: n})
}

// highest is the highest epoch in flight, or 0.
func (r *drainResource) highest() int64 {
	var h int64
	for _, f := range r.flights {
		h = max(h, f.epoch)
	}
	return h
}

// lowerThan reports whether a write below epoch is in flight.
func (r *drainResource) lowerThan(epoch int64) bool {
	for _, f := range r.flights {
		if f.epoch < epoch {
			return true
		}
	}
	return false
}

// DrainEarlierEpochs is middleware that keeps writes of different epochs to one
// resource from overlapping at the upstream, at this replica: an admitted
// write at epoch E waits, before anything of it is forwarded, until this
// replica's writes at lower epochs to the same resource have been answered
// (their answer's head came back: a response streaming after it does not
// hold newer epochs back) or cut (each is bounded by its own exchange deadline, see Deadline). A
// write admitted at E that finds a higher epoch admitted here since is
// refused as stale (412), and nothing of it is forwarded. A write whose
// deadline passes while it waits is answered 504, and nothing of it is
// forwarded either. Requests that were not admitted pass through.
func DrainEarlierEpochs(cached func(resource string) int64, obs *observe.Observer) func(http.Handler) http.Handler {
	d := newEpochDrain(cached)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			a, ok := reqctx.AdmissionFrom(r.Context())
			if !ok {
				next.ServeHTTP(w, r)
				return
			}
			if err := d.enter(r.Context(), a.Resource, a.Epoch); err != nil {
				writeDrainError(w, r, a, err, obs)
				return
			}
			aw := &answerWriter{ResponseWriter: w, answered: func() { d.leave(a.Resource, a.Epoch) }}
			defer aw.answer()
			next.ServeHTTP(aw, r)
		})
	}
}

// writeDrainError answers a write that left DrainEarlierEpochs without
// being forwarded; a refusal is counted in obs's audit.
func writeDrainError(w http.ResponseWriter, r *http.Request, a reqctx.Admission, err error, obs *observe.Observer) {
	if r.Context().Err() == context.Canceled {
		w.WriteHeader(upstream.StatusClientClosedRequest)
		return
	}
	if ctxErr := r.Context().Err(); ctxErr != nil {
		err = problem.RefuseCause(problem.KindUpstreamSlow, "writes at an earlier epoch to this resource were still at the upstream "+
			"when the exchange deadline passed; nothing of this write was forwarded", ctxErr)
	}
	p := problem.Of(err)
	if stale, ok := errors.AsType[*tokens.StaleEpochError](err); ok {
		// Admitted, then superseded: not the fence's refusal of a stale
		// epoch, whose write never took effect.
		p = problem.KindSuperseded.Problem("a write at a newer epoch to this resource was admitted while this one was on its way; nothing of it was forwarded")
		p.CurrentEpoch = problem.EpochPtr(stale.Current)
	}
	if rt, ok := reqctx.RouteFrom(r.Context()); ok {
		p.Route = rt.Name
	}
	p.Resource, p.PresentedEpoch = a.Resource, problem.EpochPtr(a.Epoch)
	if p.Decision() != "" { // a refusal, not an upstream too slow
		obs.AuditRefusal(r, a, &p)
	}
	if rt, ok := reqctx.RouteFrom(r.Context()); ok && a.Holder == "" && rt.Tokens != policy.TokensSigned {
		p = rawAnswer(p, err, r, nil) // a raw epoch's caller learns no epoch
	}
	problem.Write(w, r, p)
}

// answerWriter calls answered once, when the answer's final head is
// written (the upstream has answered) or, failing that, when answer is
// called. Unwrap lets http.ResponseController reach the connection.
type answerWriter struct {
	http.ResponseWriter
	answered func()
	done     bool
}

func (w *answerWriter) answer() {
	if !w.done {
		w.done = true
		w.answered()
	}
}

func (w *answerWriter) WriteHeader(code int) {
	w.ResponseWriter.WriteHeader(code)
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.answer()
	}
}

func (w *answerWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.answer()
	return n, err
}

func (w *answerWriter) Flush() {
	_ = http.NewResponseController(w.ResponseWriter).Flush()
	w.answer()
}

func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
