package upstream

import (
	"io"
	"net/http"
)

// noReplay returns req as net/http's Transport will never send again on a
// second connection once it has written it, when it is a keyed write or
// leased. net/http resends a request
// whose reused connection failed before an answer when it deems the
// request replayable: a body-less GET, HEAD, OPTIONS or TRACE, or a
// body-less request carrying Idempotency-Key or X-Idempotency-Key. A
// resend is a second delivery of a write the upstream may already have
// taken — after its lease lapsed, and against the gateway's promise to
// forward a keyed write at most once. A request net/http has not written
// at all is still retried, which sends nothing twice.
//
// Reads (GET, HEAD, OPTIONS, TRACE) are kept from a resend only when
// leased, where the resend could come after the lapse; elsewhere they are
// safe to repeat, and a resend rescues a read sent on a connection the
// upstream had closed while idle.
//
// The replayable methods get a body that is empty but not http.NoBody:
// net/http probes it, finds it empty and sends no body, as before (TRACE,
// which it does not probe, is sent with an empty chunked body). The
// idempotency headers move to keys net/http does not look up; HTTP/1.1
// writes them as they are spelt, and header names are case-insensitive.
func noReplay(req *http.Request, leased bool) *http.Request {
	if req.Body != nil && req.Body != http.NoBody {
		return req // not replayable: a body without GetBody
	}
	r := *req
	r.GetBody = nil
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		if leased {
			r.Body = emptyBody{}
			r.ContentLength = 0
		}
	}
	cloned := false
	for _, k := range [...]string{"Idempotency-Key", "X-Idempotency-Key"} {
		if v, ok := req.Header[k]; ok {
			if !cloned {
				r.Header, cloned = req.Header.Clone(), true
			}
			delete(r.Header, k)
			r.Header[lowerASCII(k)] = v
		}
	}
	return &r
}

// emptyBody is a request body with nothing in it that net/http does not
// know to be empty (as it knows http.NoBody).
type emptyBody struct{}

func (emptyBody) Read([]byte) (int, error) { return 0, io.EOF }
func (emptyBody) Close() error             { return nil }

// lowerASCII returns s with its ASCII letters in lower case.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
