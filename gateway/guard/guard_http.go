package guard

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/http"

	"github.com/fencegw/fencegw/gateway/observe"
	"github.com/fencegw/fencegw/gateway/problem"
)

type connStateKey struct{}

// ConnContext is the http.Server ConnContext hook a server on a
// NewListener must install: it hands each guarded connection's state to
// the handler New builds, which needs it to answer framing violations, to
// restore r.TLS on HTTP/1.x over TLS, and to let upgraded connections pass
// through. Connections that are not guarded keep ctx as it is.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if g, ok := c.(*guardConn); ok {
		return context.WithValue(ctx, connStateKey{}, g.st)
	}
	return ctx
}

func connStateFrom(ctx context.Context) *connState {
	st, _ := ctx.Value(connStateKey{}).(*connState)
	return st
}

// BodyViolation returns the violation that cut off the body of the
// request being served, if any. (A violation found in a later, pipelined
// request is answered by the synthetic request, and does not concern this
// one.)
func BodyViolation(ctx context.Context) *problem.FramingError {
	if st := connStateFrom(ctx); st != nil {
		return st.cutOff.Load()
	}
	return nil
}

// Guarded is the top of the proxy handler for requests on a guarded
// connection (others pass untouched). It counts the connection's requests
// (net/http serves them one at a time) and answers the synthetic request
// the guard put in place of a request that broke framing with the
// violation, and nothing else: a client sending the same bytes itself gets
// a request like any other. It restores r.TLS when the guard terminated TLS,
// and gives the handlers a ResponseWriter whose Hijack turns the
// connection into a pass-through. Violations are logged through
// refusals, so that a flood of them is a few lines a second.
func Guarded(log *slog.Logger, refusals *observe.RefusalLog) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			st := connStateFrom(r.Context())
			if st == nil {
				next.ServeHTTP(w, r)
				return
			}
			i := int64(-1) // OPTIONS * is not counted: net/http usually answers it itself
			if r.Method != http.MethodOptions || r.RequestURI != "*" {
				i = st.served.Add(1) - 1
			}
			if fe := st.syntheticFor(i); fe != nil {
				if refusals.Allow("", "bad-framing", fe.Status) {
					log.LogAttrs(r.Context(), slog.LevelWarn, "request framing violated", slog.String("remote", r.RemoteAddr),
						slog.Int("status", fe.Status), slog.String("error", fe.Detail))
				}
				WriteFramingProblem(w, r, fe)
				return
			}
			if st.tls != nil && r.TLS == nil {
				r = r.WithContext(r.Context()) // a shallow copy
				r.TLS = st.tls
			}
			gw := &guardWriter{ResponseWriter: w, st: st}
			next.ServeHTTP(gw, r)
			if !gw.hijacked {
				st.requestDone(i)
			}
		})
	}
}

// guardWriter is the ResponseWriter of guarded requests. It is the
// Hijacker http.NewResponseController finds (httputil.ReverseProxy hijacks
// through it for 101 answers), and unwraps to the server's for the rest.
type guardWriter struct {
	http.ResponseWriter
	st       *connState
	hijacked bool
}

// Hijack takes over the connection and turns its guard into a
// pass-through: after a protocol switch the bytes are no longer HTTP.
func (w *guardWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.hijacked = true
		w.st.passThrough.Store(true)
	}
	return c, rw, err
}

// Flush sends buffered data to the client.
func (w *guardWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap returns the server's ResponseWriter, for http.ResponseController.
func (w *guardWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// WriteFramingProblem answers a request that broke framing, and closes
// the connection.
func WriteFramingProblem(w http.ResponseWriter, r *http.Request, fe *problem.FramingError) {
	w.Header().Set("Connection", "close")
	problem.WriteError(w, r, fe)
}
