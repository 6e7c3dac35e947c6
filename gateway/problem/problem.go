package problem

import (
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/fencegw/fencegw/wire"

	"go.opentelemetry.io/otel/trace"

	"github.com/fencegw/fencegw/tokens"
)

// Problem is a problem document as the gateway answers it: the JSON
// members (wire.Problem) and how to send it.
type Problem struct {
	wire.Problem

	// retryAfter, in seconds, is sent as the Retry-After header when positive.
	retryAfter int
	// Cause is the failure behind a 503, logged, never sent.
	Cause error
	// kind is the catalogue entry the problem was made from.
	kind Kind
}

// Decision is the fencing decision the problem reports, if it refuses a
// fenced write.
func (p *Problem) Decision() tokens.Decision { return p.kind.Decision }

// ContentType is the media type of problem documents.
const ContentType = wire.ProblemContentType

func EpochPtr(e int64) *wire.Epoch { return wire.EpochOf(e) }

// WriteError answers r with the problem err stands for (see Of).
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	Write(w, r, Of(err))
}

// Write sends p as the answer to r, naming r's trace.
func Write(w http.ResponseWriter, r *http.Request, p Problem) {
	if sc := trace.SpanContextFromContext(r.Context()); sc.HasTraceID() {
		p.TraceID = sc.TraceID().String()
	}
	h := w.Header()
	// Shared, never modified values: no slice per answer.
	h["Content-Type"] = problemContentType
	h["Cache-Control"] = noStore
	h["X-Content-Type-Options"] = noSniff
	if p.Status == http.StatusUnauthorized && h.Get("WWW-Authenticate") == "" {
		// RFC 9110: a 401 names its scheme. Fencing tokens travel in their
		// own header; the parameters say which check failed.
		h.Set("WWW-Authenticate", `FencingToken realm="fencegw", error="invalid_token"`)
	}
	if p.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.retryAfter))
	}
	buf := problemBuffers.Get().(*[]byte)
	b := p.appendJSON((*buf)[:0])
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(p.Status)
	// A failed write means the client is gone; there is no one to tell.
	_, _ = w.Write(b)
	*buf = b
	problemBuffers.Put(buf)
}

// Header values every problem answer sends.
var (
	problemContentType = []string{ContentType}
	noStore            = []string{"no-store"}
	noSniff            = []string{"nosniff"}
)

// problemBuffers recycles the buffers problem documents are written into.
var problemBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// appendJSON appends p's JSON members as encoding/json would marshal them (same members,
// same order, omitempty, a trailing newline), without reflection.
func (p *Problem) appendJSON(b []byte) []byte {
	b = append(b, `{"type":`...)
	b = appendJSONString(b, p.Type)
	b = append(b, `,"title":`...)
	b = appendJSONString(b, p.Title)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(p.Status), 10)
	b = appendMember(b, "detail", p.Detail)
	b = appendMember(b, "instance", p.Instance)
	b = appendMember(b, "route", p.Route)
	b = appendMember(b, "resource", p.Resource)
	if p.PresentedEpoch != nil {
		b = append(strconv.AppendInt(append(b, `,"presented_epoch":"`...), int64(*p.PresentedEpoch), 10), '"')
	}
	if p.CurrentEpoch != nil {
		b = append(strconv.AppendInt(append(b, `,"current_epoch":"`...), int64(*p.CurrentEpoch), 10), '"')
	}
	b = appendMember(b, "trace_id", p.TraceID)
	b = appendMember(b, "lease", p.Lease)
	b = appendMember(b, "holder", p.Holder)
	if p.ExpiresAt != nil {
		b = append(b, `,"expires_at":"`...)
		b = p.ExpiresAt.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	b = appendMember(b, "owner", p.Owner)
	return append(b, "}\n"...)
}

// appendMember appends ,"name":"value" unless value is empty (omitempty).
func appendMember(b []byte, name, value string) []byte {
	if value == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendJSONString(b, value)
}

// appendJSONString appends s as a JSON string the way encoding/json does:
// quotes, backslashes and control characters escaped, <, > and & escaped
// for HTML safety, U+2028 and U+2029 escaped, invalid UTF-8 replaced by
// U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
