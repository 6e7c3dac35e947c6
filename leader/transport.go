package leader

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// TokenHeader is the request header that carries the fencing token.
const TokenHeader = "Fencing-Token"

const (
	// problemContentType is the media type of the gateway's own answers.
	problemContentType = "application/problem+json"
	// typeStaleEpoch is the problem type of the gateway's refusal of a
	// stale epoch: a newer epoch was granted, or the epoch source no longer
	// vouches for this one. It is the gateway's only 412.
	typeStaleEpoch = "urn:fencegw:problem:stale-epoch"
	// maxProblemBody bounds what the Transport reads of a 412's body to
	// learn whether the gateway sent it; the gateway's are far smaller.
	maxProblemBody = 64 << 10
)

// termKey keys the term in the context given to OnStartedLeading.
type termKey struct{ e *Elector }

// Transport returns a RoundTripper that fences requests with the current
// term, sending them through base (http.DefaultTransport when nil):
//
//   - while not leading, past the renew deadline, or when the request's
//     context descends from the context of a term that has ended, it fails
//     the request with an error wrapping ErrNotLeader without sending it;
//   - while leading, it sends the request with the term's fencing token as
//     the Fencing-Token header (the token, or the epoch when the authority
//     issues no token), but only to the origin — scheme, host and port — of
//     the request that started the exchange. A redirect that http.Client
//     follows to another origin (another host or port, or from https to
//     http) is sent without Fencing-Token, even one the caller set itself,
//     so the token never reaches a host the caller did not address. A
//     redirect to the same origin carries the token like the request it
//     follows; when the origin of the first request cannot be known (a
//     redirect whose response names no request), no token is sent;
//   - when a request that carried the token is answered with the gateway's
//     own refusal of a stale epoch — 412 Precondition Failed with an
//     application/problem+json body whose "type" is
//     urn:fencegw:problem:stale-epoch (a newer epoch was granted, or the
//     route's epoch source no longer vouches for this one) — it ends the
//     term that sent the request, as StepDown(ErrFenced) does, before
//     returning the response to the caller. Any other 412, such as an
//     upstream's own answer to an If-Match behind the gateway, is returned
//     as it came and the term goes on.
//
// To tell a 412 apart it reads up to 64 KiB of a problem+json body (waiting
// for them, within the request's context) and hands the caller the whole
// body, those bytes included, unread; a larger body is not the gateway's.
// An upstream that answers with the gateway's own problem type is taken at
// its word: the term ends, which is the safe side.
//
// Give this Transport to a client whose requests go to the gateway's proxy:
// every request the client starts carries the token. A write redirected to
// another origin bypasses the gateway and is not fenced; refuse such
// redirects in the client's CheckRedirect when every write must go through
// the gateway.
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
	first, known := firstURL(req)
	fenced := known && sameOrigin(first, req.URL)
	if fenced {
		out.Header.Set(TokenHeader, value)
	} else {
		out.Header.Del(TokenHeader)
	}
	resp, err := tr.base.RoundTrip(out)
	if err != nil || !fenced || resp.StatusCode != http.StatusPreconditionFailed {
		return resp, err
	}
	if isStaleEpoch(resp) {
		tr.e.end(t, fmt.Errorf("%w: %s %s answered 412 stale epoch at epoch %d", ErrFenced, req.Method, req.URL.Redacted(), t.Epoch))
	}
	return resp, nil
}

// firstURL returns the URL of the request that started the exchange req
// belongs to: req's own, or for a redirect http.Client follows (req.Response
// set), that of the first request of the chain. It reports false when a
// response in the chain names no request.
func firstURL(req *http.Request) (*url.URL, bool) {
	for req.Response != nil {
		if req.Response.Request == nil {
			return nil, false
		}
		req = req.Response.Request
	}
	return req.URL, req.URL != nil
}

// sameOrigin reports whether a and b have the same scheme, host and port
// (RFC 6454), with the scheme's default port when none is written.
func sameOrigin(a, b *url.URL) bool {
	if a == nil || b == nil {
		return false
	}
	oa, oka := origin(a)
	ob, okb := origin(b)
	return oka && okb && oa == ob
}

func origin(u *url.URL) (string, bool) {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		default:
			return "", false
		}
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", false
	}
	return scheme + "://" + net.JoinHostPort(host, port), true
}

// isStaleEpoch reports whether resp, a 412, is the gateway's refusal of a
// stale epoch: problem+json whose "type" member is typeStaleEpoch. It reads
// at most maxProblemBody+1 bytes of the body and puts them back in front of
// the rest, so that the caller reads the body as it was sent.
func isStaleEpoch(resp *http.Response) bool {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != problemContentType || resp.Body == nil || resp.Body == http.NoBody {
		return false
	}
	head, err := io.ReadAll(io.LimitReader(resp.Body, maxProblemBody+1))
	resp.Body = replayBody{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	if err != nil || len(head) > maxProblemBody {
		return false
	}
	var members map[string]json.RawMessage // exact member names
	var typ string
	return json.Unmarshal(head, &members) == nil && json.Unmarshal(members["type"], &typ) == nil && typ == typeStaleEpoch
}

// replayBody reads the bytes already read of a body, then the rest of it;
// closing it closes the original body.
type replayBody struct {
	io.Reader
	io.Closer
}

// fencing returns the term a request with ctx may be sent in, with its
// Fencing-Token value.
func (e *Elector) fencing(ctx context.Context) (*term, string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.cur
	if t == nil || !e.cfg.Clock.Now().Before(t.deadline) {
		return nil, "", false
	}
	if owner, ok := ctx.Value(termKey{e}).(*term); ok && owner != t {
		return nil, "", false
	}
	return t, t.fencingValue(), true
}
