package guard

import (
	"bufio"
	"io"
	"math"
	"net"
	"net/http"
	"sync"
	"time"
)

// BudgetOptions bound the phases of a request that follow its head (the
// head itself is bounded by the http.Server's ReadHeaderTimeout).
type BudgetOptions struct {
	// BodyTimeout is how long after its head a request's body may take to
	// arrive, plus one second per MinBodyRate bytes of it. 0: unbounded.
	BodyTimeout time.Duration
	// MinBodyRate, in bytes per second, lengthens the body's time by the
	// size of the body: its declared Content-Length, or for a body of
	// unknown length what arrived so far. 0: BodyTimeout alone.
	MinBodyRate int64
	// WriteTimeout bounds each write of the answer to the client (to
	// within 1/64 of it). 0: unbounded.
	WriteTimeout time.Duration
}

// Budget is middleware that gives every request a deadline for each phase
// after its head, whether or not the handler reads the body or writes an
// answer:
//
//   - the body: the connection's read deadline is the head's arrival +
//     BodyTimeout + size/MinBodyRate (see BudgetOptions) until the body has
//     been read to its end, and stays set when the handler returns without
//     reading it, so the server's discarding of an unread body ends at the
//     same moment (then the answer says Connection: close, and the
//     connection closes). A request without a body gets no read deadline.
//   - the answer: before each write of it, and when the handler returns,
//     the write deadline is now + WriteTimeout (counted from the body's
//     deadline when the server still has an unread body to discard). A
//     streamed answer (a proxied stream, a lease watch) may last as long as
//     it flows.
//
// A handler may set its own deadlines through http.ResponseController: a
// read deadline it sets holds when earlier than the body's (the body's
// otherwise: it never extends it); once it sets a write deadline, Budget
// leaves writes to it. Hijacked connections are the hijacker's.
func Budget(o BudgetOptions) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if o.BodyTimeout <= 0 && o.WriteTimeout <= 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b := &budgetWriter{ResponseWriter: w, rc: *http.NewResponseController(w), o: &o, start: time.Now()}
			b.writeSoon() // a 100 Continue may be written before any answer
			if o.BodyTimeout > 0 && r.Body != nil && r.Body != http.NoBody {
				b.body = budgetBody{ReadCloser: r.Body, w: b}
				b.chunked = r.ContentLength < 0
				b.bodyBy = o.bodyBy(b.start, r.ContentLength)
				// Not every ResponseWriter supports deadlines (httptest
				// recorders).
				_ = b.applyRead()
				r.Body = &b.body
			} else {
				b.bodyDone = r.Body == nil || r.Body == http.NoBody
			}
			next.ServeHTTP(b, r)
			b.handlerDone()
		})
	}
}

// bodyBy is when a body of n bytes (so far) must have arrived by.
func (o *BudgetOptions) bodyBy(start time.Time, n int64) time.Time {
	d := perRate(n, o.MinBodyRate)
	if d > math.MaxInt64-o.BodyTimeout {
		return start.Add(math.MaxInt64)
	}
	return start.Add(o.BodyTimeout + d)
}

// perRate is how long n bytes take at rate bytes per second (0 when the
// rate is 0), at most the longest Duration.
func perRate(n, rate int64) time.Duration {
	if rate <= 0 || n <= 0 {
		return 0
	}
	secs := n / rate
	if secs >= math.MaxInt64/int64(time.Second) {
		return math.MaxInt64
	}
	return time.Duration(secs)*time.Second + time.Duration(float64(n%rate)/float64(rate)*float64(time.Second))
}

// budgetWriter is the ResponseWriter Budget hands its handler: it keeps
// the connection's deadlines (see Budget). Unwrap gives the server's for
// http.ResponseController.
type budgetWriter struct {
	http.ResponseWriter
	rc    http.ResponseController // of the server's writer
	o     *BudgetOptions
	start time.Time
	body  budgetBody

	mu        sync.Mutex // the body may be read on another goroutine
	chunked   bool       // the body's length is unknown
	bodyBy    time.Time  // the body's deadline; zero once it was read whole
	readBy    time.Time  // the handler's own read deadline, if set
	bodyDone  bool       // the body was read whole: no read deadline is kept
	writeBy   time.Time  // the write deadline Budget set last
	ownWrites bool       // the handler set a write deadline itself
	hijacked  bool
}

// applyRead sets the connection's read deadline to the earlier of the
// body's and the handler's. Called with mu held, or before the handler
// runs.
func (b *budgetWriter) applyRead() error {
	by := b.readBy
	if by.IsZero() || (!b.bodyBy.IsZero() && b.bodyBy.Before(by)) {
		by = b.bodyBy
	}
	return b.rc.SetReadDeadline(by)
}

// bodyRead records n more bytes of the body, or its end.
func (b *budgetWriter) bodyRead(read int64, eof bool) {
	if !eof && (!b.chunked || b.o.MinBodyRate <= 0) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bodyDone || b.hijacked {
		return
	}
	if eof {
		// The server's background read now watches for the client going
		// away: a deadline here, the body's or the handler's (whose read
		// deadline bounds the body), would end the request.
		b.bodyBy, b.readBy, b.bodyDone = time.Time{}, time.Time{}, true
	} else {
		b.bodyBy = b.o.bodyBy(b.start, read)
	}
	_ = b.applyRead()
}

// SetReadDeadline is the handler's own read deadline (see Budget). It
// bounds the body: once the body was read whole it is not kept, so that
// the server's background read never ends a request whose client is still
// there (which would read as a client gone away).
func (b *budgetWriter) SetReadDeadline(t time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bodyDone {
		return nil
	}
	b.readBy = t
	return b.applyRead()
}

// SetWriteDeadline is the handler's own write deadline: Budget stops
// setting it.
func (b *budgetWriter) SetWriteDeadline(t time.Time) error {
	b.mu.Lock()
	b.ownWrites = true
	b.mu.Unlock()
	return b.rc.SetWriteDeadline(t)
}

// writeSoon sets the write deadline for a write about to be made: now +
// WriteTimeout. It skips setting one that is within 1/64 of WriteTimeout
// of the one set already, so a small answer costs one deadline, not one
// per write.
func (b *budgetWriter) writeSoon() {
	if b.o.WriteTimeout <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writeFrom(time.Now())
}

// writeFrom sets the write deadline to from + WriteTimeout unless the
// handler owns it, or the one set is later than 63/64 of that already.
// Called with mu held.
func (b *budgetWriter) writeFrom(from time.Time) {
	if b.ownWrites || b.hijacked {
		return
	}
	by := from.Add(b.o.WriteTimeout)
	if b.writeBy.After(by.Add(-b.o.WriteTimeout / 64)) {
		return
	}
	b.writeBy = by
	_ = b.rc.SetWriteDeadline(by)
}

func (b *budgetWriter) WriteHeader(code int) {
	b.writeSoon()
	b.ResponseWriter.WriteHeader(code)
}

func (b *budgetWriter) Write(p []byte) (int, error) {
	b.writeSoon()
	return b.ResponseWriter.Write(p)
}

// FlushError sends buffered data to the client, within the write deadline.
func (b *budgetWriter) FlushError() error {
	b.writeSoon()
	return b.rc.Flush()
}

// Flush sends buffered data to the client.
func (b *budgetWriter) Flush() { _ = b.FlushError() }

// Hijack hands the connection over; net/http clears its deadlines, and
// Budget sets none from now on: they are the hijacker's.
func (b *budgetWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := b.rc.Hijack()
	if err == nil {
		b.mu.Lock()
		b.hijacked = true
		b.mu.Unlock()
	}
	return c, rw, err
}

// Unwrap returns the server's ResponseWriter, for http.ResponseController.
func (b *budgetWriter) Unwrap() http.ResponseWriter { return b.ResponseWriter }

// handlerDone bounds what the server does after the handler returned:
// discarding a body the handler left unread (the read deadline stays as it
// is), then writing the answer (the write deadline, counted from the end
// of that discarding at the latest).
func (b *budgetWriter) handlerDone() {
	if b.o.WriteTimeout <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	from := time.Now()
	if b.bodyBy.After(from) {
		from = b.bodyBy
	}
	b.writeFrom(from)
}

// budgetBody is a request body that tells its budgetWriter how much of it
// arrived.
type budgetBody struct {
	io.ReadCloser
	w    *budgetWriter
	read int64
}

func (r *budgetBody) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.read += int64(n)
	if n > 0 || err == io.EOF {
		r.w.bodyRead(r.read, err == io.EOF)
	}
	return n, err
}
