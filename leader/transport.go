package leader

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// TokenHeader is the request header that carries the fencing token.
const TokenHeader = "Fencing-Token"

// termKey keys the term in the context given to OnStartedLeading.
type termKey struct{ e *Elector }

// Transport returns a RoundTripper that fences every request with the
// current term, sending it through base (http.DefaultTransport when nil):
//
//   - while leading, it sends the request with the term's fencing token as
//     the Fencing-Token header: the token, or the epoch when the authority
//     issues no token (a route with raw tokens);
//   - while not leading, past the renew deadline, or when the request's
//     context descends from the context of a term that has ended, it fails
//     the request with an error wrapping ErrNotLeader without sending it;
//   - when the answer is 412 Precondition Failed (the gateway refused a stale
//     epoch), it ends the term that sent the request, as StepDown(ErrFenced)
//     does, before returning the response to the caller.
//
// Any 412 counts, including one the upstream itself sends behind the
// gateway: fencing errs on the side of stepping down.
func (e *Elector) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{e: e, base: base}
}

type transport struct {
	e    *Elector
	base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t, value, ok := tr.e.fencing(req.Context())
	if !ok {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("%w: %s %s not sent", ErrNotLeader, req.Method, req.URL.Redacted())
	}
	out := req.Clone(req.Context())
	out.Header.Set(TokenHeader, value)
	resp, err := tr.base.RoundTrip(out)
	if err == nil && resp.StatusCode == http.StatusPreconditionFailed {
		tr.e.end(t, fmt.Errorf("%w: %s %s answered 412 at epoch %d", ErrFenced, req.Method, req.URL.Redacted(), t.Epoch))
	}
	return resp, err
}

// fencing returns the term a request with ctx may be sent in, with its
// Fencing-Token value.
func (e *Elector) fencing(ctx context.Context) (*term, string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.cur
	if t == nil || !time.Now().Before(t.deadline) {
		return nil, "", false
	}
	if owner, ok := ctx.Value(termKey{e}).(*term); ok && owner != t {
		return nil, "", false
	}
	return t, t.fencingValue(), true
}
