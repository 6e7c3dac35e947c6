package idempotency

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/fencegw/fencegw/gateway/observe"
	"github.com/fencegw/fencegw/gateway/problem"
	"github.com/fencegw/fencegw/gateway/reqctx"
	"github.com/fencegw/fencegw/gateway/upstream"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// Options tune at-most-once writes.
type Options struct {
	// TTL is how long a key's record lasts (24 h when 0), and never less
	// than InFlightFor plus InFlightMargin: a record does not expire while
	// its write may still be at the upstream, whatever TTL says.
	TTL time.Duration
	// MaxAnswerBytes bounds the answer body kept for replays.
	MaxAnswerBytes int
	// InFlightFor is how long a pending record counts as in flight; past
	// it, its replica is taken to have died mid-write and its outcome is
	// unknown. It should exceed the longest exchange (UpstreamTimeout).
	InFlightFor time.Duration
	// SettleTimeout bounds the store call that records an outcome.
	SettleTimeout time.Duration

	Refusals *observe.RefusalLog // New's, for the failed exchanges it answers
}

// InFlightMargin is how much longer than Options.InFlightFor a
// key's record lives at least: once a pending record's write may no longer
// be in flight, its retries are told the outcome is unknown for at least
// this long, instead of finding the key free.
const InFlightMargin = time.Minute

// Middleware is the middleware that forwards a fenced write carrying an
// Idempotency-Key at most once per (resource, key), through any replica,
// at any epoch. It runs after the fence admitted the write (a stale epoch
// is refused whatever its key). The first use of a key claims it in the
// store with the request's method, path and query, forwards the write
// (with its Idempotency-Key) and keeps the upstream's answer. The body is
// not held: it streams to the upstream and is hashed as it passes, and the
// request's fingerprint (method, path, query, body digest) is recorded
// with the outcome, once the body has been read to its end. Nothing sends
// a body twice (the transports never resend a request with a body), so it
// is neither kept nor spooled. A later use with the same fingerprint gets
// that answer again with Idempotent-Replayed: true, and nothing is
// forwarded. Otherwise, and nothing is forwarded either:
//   - another method, path or query, or, once the first is settled,
//     another body: 422;
//   - the first still in flight: 409 with Retry-After, whatever the body;
//   - the first forwarded without an answer (a timeout, a reset, a replica
//     that died mid-write): 409 idempotency-not-replayable, until the
//     record expires; so is an answer too long to keep, or one whose
//     request body could not be read whole to fingerprint it;
//   - no key on a route that requires one: 400, as is a malformed key.
//
// A write none of which reached the upstream (refused after admission, cut
// before any of it was sent, an upstream that could not be reached) frees
// its key.
func Middleware(store tokens.IdempotencyStore, o Options, obs *observe.Observer, log *slog.Logger) func(http.Handler) http.Handler {
	if o.TTL <= 0 {
		o.TTL = 24 * time.Hour
	}
	o.TTL = max(o.TTL, o.InFlightFor+InFlightMargin)
	fail := upstream.ErrorHandler(log, obs, o.Refusals)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ex, _ := reqctx.ExchangeFrom(r.Context())
			if ex == nil || !ex.Admitted || ex.Route.Idempotency == policy.IdempotencyOff {
				next.ServeHTTP(w, r)
				return
			}
			rt, a := ex.Route, ex.Admission
			key, err := parseIdemKey(r.Header.Values(KeyHeader))
			switch {
			case errors.Is(err, errNoIdemKey) && rt.Idempotency != policy.IdempotencyRequired:
				next.ServeHTTP(w, r)
				return
			case errors.Is(err, errNoIdemKey):
				obs.IdemOutcome(r.Context(), rt, "missing")
				writeIdemProblem(w, r, a, problem.KindIdemKeyBad.Problem("this route requires an "+KeyHeader+" header on fenced writes"))
				return
			case err != nil:
				obs.IdemOutcome(r.Context(), rt, "invalid")
				writeIdemProblem(w, r, a, problem.KindIdemKeyBad.Problem(err.Error()))
				return
			}
			kw := &keyedWrite{r: r, ex: ex, key: key, claim: newClaim(), request: requestDigest(r)}
			rec, created, err := store.ClaimKey(r.Context(), a.Resource, key,
				tokens.IdemRecord{Request: kw.request, State: tokens.IdemPending, Claim: kw.claim, ClaimedAt: time.Now().UTC()}, o.TTL)
			if err != nil {
				writeIdemProblem(w, r, a, problem.Of(err))
				return
			}
			if !created {
				answerRecorded(w, r, a, rec, kw.request, o, obs, fail)
				return
			}
			kw.body = newHashedBody(r.Body)
			if r.Body != nil && r.Body != http.NoBody {
				r.Body = kw.body
			}
			kw.cw = &captureWriter{ResponseWriter: w, max: o.MaxAnswerBytes}
			done := false
			defer func() {
				// Also when the proxy aborts the answer with a panic
				// (http.ErrAbortHandler): its outcome is then unknown.
				kw.settle(store, o, done, obs, log)
				if done && !kw.cw.truncated {
					kw.cw.release() // recorded first: an answer the client saw can be replayed
				}
			}()
			next.ServeHTTP(kw.cw, r)
			done = true
		})
	}
}

// answerRecorded answers a write whose key was used before, from its
// record: req is the request's digest without its body. The body is read
// (and hashed, not kept) only when the record has a fingerprint to
// compare it with; fail answers a body that cannot be read.
func answerRecorded(w http.ResponseWriter, r *http.Request, a reqctx.Admission, rec tokens.IdemRecord, req string,
	o Options, obs *observe.Observer, fail func(http.ResponseWriter, *http.Request, error)) {
	rt := routeOf(r)
	mismatch := rec.Request != "" && rec.Request != req
	if !mismatch && rec.State == tokens.IdemPending && time.Since(rec.ClaimedAt) < o.InFlightFor {
		obs.IdemOutcome(r.Context(), rt, "in_flight")
		writeIdemProblem(w, r, a, problem.KindIdemInFlight.Problem("a write with this Idempotency-Key is still on its way to the upstream; retry after it is answered"))
		return
	}
	if !mismatch && rec.Fingerprint != "" {
		d, err := newHashedBody(r.Body).finish()
		if err != nil {
			fail(w, r, err)
			return
		}
		mismatch = fingerprint(r, d) != rec.Fingerprint
	}
	switch {
	case mismatch:
		obs.IdemOutcome(r.Context(), rt, "mismatch")
		writeIdemProblem(w, r, a, problem.KindIdemKeyReused.Problem("this Idempotency-Key was first used with another request (method, path or body); use a new key for a new request"))
	case rec.State == tokens.IdemDone && rec.Fingerprint == "":
		obs.IdemOutcome(r.Context(), rt, "not_replayable")
		writeIdemProblem(w, r, a, problem.KindIdemNotReplayable.Problem(
			"a write with this Idempotency-Key was forwarded and answered, but its body was not received whole, so no request can be matched to it; it is not forwarded again"))
	case rec.State == tokens.IdemDone && rec.Answer != nil && !rec.Answer.Truncated:
		obs.IdemOutcome(r.Context(), rt, "replayed")
		h := w.Header()
		for k, vs := range rec.Answer.Header {
			h[k] = append([]string(nil), vs...)
		}
		h.Set(IdempotentReplayedHeader, "true")
		w.WriteHeader(rec.Answer.Status)
		w.Write(rec.Answer.Body)
	case rec.State == tokens.IdemDone:
		obs.IdemOutcome(r.Context(), rt, "not_replayable")
		status := 0
		if rec.Answer != nil {
			status = rec.Answer.Status
		}
		writeIdemProblem(w, r, a, problem.KindIdemNotReplayable.Problem(fmt.Sprintf(
			"this write was forwarded once and answered with status %d, but its answer was too long to keep; it is not forwarded again", status)))
	default:
		obs.IdemOutcome(r.Context(), rt, "not_replayable")
		writeIdemProblem(w, r, a, problem.KindIdemNotReplayable.Problem(
			"a write with this Idempotency-Key was forwarded and no answer came back: it may or may not have taken effect, and it is not forwarded again while the key's record lasts"))
	}
}

// keyedWrite is a write that claimed its key: what settling it needs.
type keyedWrite struct {
	r       *http.Request
	ex      *reqctx.Exchange
	key     string
	claim   string
	request string      // requestDigest
	body    *hashedBody // the request body, hashed as it streams
	cw      *captureWriter
}

// settle records the outcome of the write that claimed a key: its answer
// when the upstream answered, unknown when some of it may have reached the
// upstream without an answer coming back, and nothing (the key is freed)
// when nothing was forwarded. A recorded outcome carries the request's
// fingerprint: what the upstream left unread of the body is read (and
// hashed) first, within the exchange's deadline.
func (kw *keyedWrite) settle(store tokens.IdempotencyStore, o Options, completed bool, obs *observe.Observer, log *slog.Logger) {
	ctx, ex, cw, resource := kw.r.Context(), kw.ex, kw.cw, kw.ex.Admission.Resource
	rec := &tokens.IdemRecord{Request: kw.request, Claim: kw.claim, ClaimedAt: time.Now().UTC()}
	outcome := "forwarded"
	switch {
	case !ex.Forwarding:
		rec, outcome = nil, "freed"
	case ex.Answered && completed && cw.status != 0:
		rec.State = tokens.IdemDone
		rec.Answer = &tokens.IdemAnswer{Status: cw.status, Header: cw.header, Body: cw.body.Bytes(), Truncated: cw.truncated}
	default:
		rec.State, outcome = tokens.IdemUnknown, "unknown"
	}
	if rec != nil {
		if d, err := kw.body.finish(); err != nil {
			log.LogAttrs(ctx, slog.LevelInfo, "idempotency record kept without the body's digest", slog.String("resource", resource),
				slog.String("error", err.Error()))
		} else {
			rec.Fingerprint = fingerprint(kw.r, d)
		}
	}
	obs.IdemOutcome(ctx, ex.Route, outcome)
	if o.SettleTimeout <= 0 {
		o.SettleTimeout = tokens.DefaultStoreTimeout
	}
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.SettleTimeout)
	defer cancel()
	if err := store.SettleKey(c, resource, kw.key, kw.claim, rec); err != nil {
		// The record stays pending: once InFlightFor passes, retries get
		// not-replayable. Nothing is ever forwarded twice.
		log.LogAttrs(ctx, slog.LevelWarn, "idempotency outcome not recorded", slog.String("resource", resource),
			slog.String("outcome", outcome), slog.String("error", err.Error()))
	}
}

// writeIdemProblem answers a write refused for its Idempotency-Key.
func writeIdemProblem(w http.ResponseWriter, r *http.Request, a reqctx.Admission, p problem.Problem) {
	if rt, ok := reqctx.RouteFrom(r.Context()); ok {
		p.Route = rt.Name
	}
	p.Resource, p.PresentedEpoch = a.Resource, problem.EpochPtr(a.Epoch)
	problem.Write(w, r, p)
}

// routeOf returns the request's route, nil when it has none.
func routeOf(r *http.Request) *policy.Route {
	rt, _ := reqctx.RouteFrom(r.Context())
	return rt
}

// newClaim names a claim: 128 random bits.
func newClaim() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// captureWriter keeps what the proxy answers: the status and header of the
// final head, and the body up to max bytes. It holds the answer back until
// release, so the outcome is recorded before the client can see it (a
// client that got an answer can have it replayed), unless the body grows
// past max: then it sends what it holds and streams the rest, and the
// answer is kept as truncated.
type captureWriter struct {
	http.ResponseWriter
	max       int
	status    int
	header    map[string][]string
	body      bytes.Buffer
	truncated bool // the body outgrew max: streaming through
}

func (w *captureWriter) WriteHeader(code int) {
	if code < 200 && code != http.StatusSwitchingProtocols {
		w.ResponseWriter.WriteHeader(code) // interim answers pass
		return
	}
	if w.status == 0 {
		w.status = code
		w.header = w.ResponseWriter.Header().Clone()
	}
}

func (w *captureWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.truncated {
		return w.ResponseWriter.Write(b)
	}
	if w.body.Len()+len(b) <= w.max {
		return w.body.Write(b)
	}
	w.truncated = true
	w.release()
	return w.ResponseWriter.Write(b)
}

// release sends what is held: the head and the body so far.
func (w *captureWriter) release() {
	if w.status == 0 {
		return
	}
	w.ResponseWriter.WriteHeader(w.status)
	if w.body.Len() > 0 {
		w.ResponseWriter.Write(w.body.Bytes())
	}
}

func (w *captureWriter) Flush() {
	if w.truncated {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

func (w *captureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
