package gateway

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

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
}

// New returns the proxy handler: path check and route matching, the body
// limit, the fencing decision, and the reverse proxy, in that order.
func New(o Options) http.Handler {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Transport == nil {
		o.Transport = NewTransport(TransportOptions{})
	}
	r := chi.NewRouter()
	r.Use(MatchRoute(o.Routes))
	if o.MaxBodyBytes > 0 {
		r.Use(LimitBody(o.MaxBodyBytes))
	}
	r.Use(Fencing(o.Fence, o.Logger))
	r.Handle("/*", NewProxy(o.Transport, o.Logger))
	return r
}

// LimitBody is middleware that refuses a request whose declared length
// exceeds max with 413, and cuts off a body that grows past max while
// streaming (the proxy then answers 413).
func LimitBody(max int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > max {
				writeProblem(w, Problem{Type: TypeBodyTooLarge, Title: "Request body too large",
					Status: http.StatusRequestEntityTooLarge,
					Detail: fmt.Sprintf("the request body of %d bytes exceeds %d bytes", r.ContentLength, max)})
				return
			}
			if r.Body != nil && r.Body != http.NoBody {
				r.Body = http.MaxBytesReader(w, r.Body, max)
			}
			next.ServeHTTP(w, r)
		})
	}
}
