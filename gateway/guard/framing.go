package guard

import (
	"bytes"
	"fmt"
	"net/http"

	"github.com/fencegw/fencegw/gateway/problem"
)

// Limits of the parts net/http reads through its 4 KiB connection buffer.
const (
	// chunkLineMax bounds a chunk-size line, CRLF included (net/http: 4 KiB).
	chunkLineMax = 1024
	// trailerMax bounds the trailer section, its final CRLF included: net/http
	// peeks at most its 4 KiB buffer for the end of the trailers.
	trailerMax = 4096
	// excessMax is net/http's bound on chunked-encoding overhead (chunk
	// lines and extensions) beyond 16 bytes per chunk plus twice its data.
	excessMax = 16 << 10
)

// scanEvent reports the boundaries feed stops at.
type scanEvent uint8

const (
	// evHead: a request head (request line and header section) was
	// validated; it ends at the scanner's position.
	evHead scanEvent = 1 << iota
	// evMessage: a whole request (head and body) ends at the position.
	evMessage
)

type scanState uint8

const (
	stIdle        scanState = iota // between requests
	stRequestLine                  // in the request line
	stHeaderLine                   // in the header section
	stBody                         // in Content-Length data
	stChunkLine                    // in a chunk-size line
	stChunkData                    // in chunk data
	stChunkCR                      // expecting the CR after chunk data
	stChunkLF                      // expecting the LF after chunk data
	stTrailerLine                  // in the trailer section
	stFailed                       // after a violation
)

// streaming reports whether bytes read in state st may be passed on as they
// arrive: body data, and the gap between requests. Every other part is held
// until it is whole and valid.
func (st scanState) streaming() bool { return st == stIdle || st == stBody || st == stChunkData }

// request is what the scanner keeps of the head of the request in progress.
type request struct {
	http10     bool
	asterisk   bool // OPTIONS *, which net/http answers itself
	upgrade    bool // an Upgrade field: the connection may stop being HTTP
	cl         bool // a Content-Length field was seen
	te         bool // a Transfer-Encoding field (always chunked) was seen
	hosts      int
	length     int64 // Content-Length
	headLen    int   // bytes of the head so far
	trailerLen int   // bytes of the trailer section so far
	bodyLen    int64 // body data bytes so far (chunked: data only)
	excess     int64 // chunked overhead, as net/http counts it
}

// framingScanner is a strict, incremental scanner of the HTTP/1.1 request
// stream a client sends on one connection. It does no I/O and keeps no
// bytes but the line in progress: feed it the stream in pieces of any size
// and it tracks message framing exactly as RFC 9112 defines it:
//
//   - request line: a token method, SP, a request target without controls
//     or whitespace, SP, HTTP/1.1 or HTTP/1.0, CRLF;
//   - field lines: a token name, ':' right after it, a value without
//     controls (HTAB aside); CRLF only (a bare LF or CR is a violation); a
//     line starting with SP or HTAB (obs-fold) is a violation;
//   - body length: Transfer-Encoding must be one field whose value is
//     chunked (another coding: 501), never with Content-Length, never in
//     HTTP/1.0; at most one Content-Length, of 1 to 19 digits; neither
//     means no body. An HTTP/1.1 request has exactly one Host field;
//   - chunked bodies: hex chunk sizes with optional extensions, data
//     followed by exactly CRLF, the last chunk, trailer fields (validated
//     like header fields, framing fields refused) and the final CRLF.
//
// A head longer than maxHead is a 431 violation. Whatever it accepts,
// net/http parses the same way, as the same requests with the same bodies:
// the scanner is at least as strict as net/http everywhere.
//
// The verdict does not depend on how the stream is cut into pieces: the
// same bytes give the same events at the same positions and the same error.
type framingScanner struct {
	maxHead   int
	st        scanState
	pos       int64  // bytes consumed
	msgStart  int64  // where the request in progress began
	holdStart int64  // where the bytes held back began (when !st.streaming())
	remain    int64  // body or chunk data bytes left
	line      []byte // the line in progress, when it spans feeds
	req       request
	err       *problem.FramingError
}

func newFramingScanner(maxHead int) *framingScanner { return &framingScanner{maxHead: maxHead} }

// safe returns the stream position up to which every byte consumed may be
// passed on: everything before the part in progress, unless that part is
// body data.
func (s *framingScanner) safe() int64 {
	if s.st.streaming() {
		return s.pos
	}
	return s.holdStart
}

// feed consumes the next bytes of the stream and returns how many it
// consumed. It stops early right after a head or a request ends, saying
// which; after a violation it consumes nothing and returns the violation
// again.
func (s *framingScanner) feed(p []byte) (int, scanEvent, error) {
	if s.err != nil {
		return 0, 0, s.err
	}
	n := 0
	for n < len(p) {
		switch s.st {
		case stIdle:
			s.req = request{}
			s.msgStart, s.holdStart, s.st = s.pos, s.pos, stRequestLine
		case stBody, stChunkData:
			k := min(int64(len(p)-n), s.remain)
			n += int(k)
			s.pos += k
			s.remain -= k
			s.req.bodyLen += k
			if s.remain > 0 {
				continue
			}
			if s.st == stBody {
				s.st = stIdle
				return n, evMessage, nil
			}
			s.holdStart, s.st = s.pos, stChunkCR
		case stChunkCR, stChunkLF:
			c := p[n]
			n++
			s.pos++
			if s.st == stChunkCR && c == '\r' {
				s.st = stChunkLF
			} else if s.st == stChunkLF && c == '\n' {
				s.st = stChunkLine
			} else {
				return n, 0, s.fail(http.StatusBadRequest, "chunk data is not followed by CRLF")
			}
		default:
			k, ev, err := s.lineStep(p[n:])
			n += k
			if err != nil || ev != 0 {
				return n, ev, err
			}
		}
	}
	return n, 0, nil
}

func (s *framingScanner) fail(status int, format string, args ...any) error {
	s.err = &problem.FramingError{Status: status, Detail: fmt.Sprintf(format, args...)}
	s.st = stFailed
	return s.err
}

// where names the part of the request the line in progress belongs to.
func (s *framingScanner) where() string {
	switch s.st {
	case stRequestLine:
		return "the request line"
	case stHeaderLine:
		return "a header field line"
	case stChunkLine:
		return "a chunk-size line"
	}
	return "a trailer field line"
}

// lineStep consumes p up to the end of the line in progress, or all of p
// when the line does not end in it, checking the line's length limit first.
func (s *framingScanner) lineStep(p []byte) (int, scanEvent, error) {
	i := bytes.IndexByte(p, '\n')
	take := len(p)
	if i >= 0 {
		take = i + 1
	}
	if err := s.checkLength(len(s.line) + take); err != nil {
		return take, 0, err
	}
	s.pos += int64(take)
	if i < 0 {
		s.line = append(s.line, p...)
		return take, 0, nil
	}
	line := p[:take]
	if len(s.line) > 0 {
		s.line = append(s.line, line...)
		line = s.line
	}
	ev, err := s.endLine(line)
	s.line = s.line[:0]
	return take, ev, err
}

// checkLength fails when the line in progress, n bytes so far, takes its
// part past that part's limit.
func (s *framingScanner) checkLength(n int) error {
	switch s.st {
	case stRequestLine, stHeaderLine:
		if s.req.headLen+n > s.maxHead {
			return s.fail(http.StatusRequestHeaderFieldsTooLarge, "the request head exceeds %d bytes", s.maxHead)
		}
	case stChunkLine:
		if n > chunkLineMax {
			return s.fail(http.StatusBadRequest, "a chunk-size line exceeds %d bytes", chunkLineMax)
		}
	case stTrailerLine:
		if s.req.trailerLen+n > trailerMax {
			return s.fail(http.StatusBadRequest, "the trailer section exceeds %d bytes", trailerMax)
		}
	}
	return nil
}

// endLine checks a whole line, LF included, and acts on it.
func (s *framingScanner) endLine(line []byte) (scanEvent, error) {
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return 0, s.fail(http.StatusBadRequest, "bare LF ending %s (CRLF required)", s.where())
	}
	b := line[:len(line)-2]
	if i := bytes.IndexByte(b, '\r'); i >= 0 {
		return 0, s.fail(http.StatusBadRequest, "bare CR in %s", s.where())
	}
	switch s.st {
	case stRequestLine:
		s.req.headLen += len(line)
		if err := s.requestLine(b); err != nil {
			return 0, err
		}
		s.st = stHeaderLine
	case stHeaderLine:
		s.req.headLen += len(line)
		if len(b) == 0 {
			return s.endHead()
		}
		return 0, s.headerField(b)
	case stChunkLine:
		return s.chunkLine(b)
	case stTrailerLine:
		s.req.trailerLen += len(line)
		if len(b) == 0 {
			s.st = stIdle
			return evMessage, nil
		}
		return 0, s.trailerField(b)
	}
	return 0, nil
}

// endHead decides the body's length once the head is whole. The head
// itself may then be passed on.
func (s *framingScanner) endHead() (scanEvent, error) {
	if !s.req.http10 && s.req.hosts == 0 {
		return 0, s.fail(http.StatusBadRequest, "an HTTP/1.1 request without a Host field")
	}
	s.holdStart = s.pos
	switch {
	case s.req.te:
		s.st = stChunkLine
	case s.req.length > 0:
		s.st, s.remain = stBody, s.req.length
	default:
		s.st = stIdle
		return evHead | evMessage, nil
	}
	return evHead, nil
}

// chunkLine checks a chunk-size line: chunk-size [ chunk-ext ] without its
// CRLF, and counts its overhead as net/http does.
func (s *framingScanner) chunkLine(b []byte) (scanEvent, error) {
	var n int64
	i := 0
	for ; i < len(b) && isHex(b[i]); i++ {
		if i == 16 {
			return 0, s.fail(http.StatusBadRequest, "a chunk size has more than 16 hex digits")
		}
		if n > maxInt64>>4 {
			return 0, s.fail(http.StatusBadRequest, "a chunk size overflows 63 bits")
		}
		n = n<<4 | int64(hexValue(b[i]))
	}
	if i == 0 {
		return 0, s.fail(http.StatusBadRequest, "a chunk-size line does not start with a hex size: %s", quote(b))
	}
	if !validChunkExt(b[i:]) {
		return 0, s.fail(http.StatusBadRequest, "invalid chunk extension %s", quote(b[i:]))
	}
	// net/http allows 16 bytes of overhead per chunk plus twice its data.
	s.req.excess += int64(len(b)) + 2
	s.req.excess -= 16 + 2*n
	s.req.excess = max(s.req.excess, 0)
	if s.req.excess > excessMax {
		return 0, s.fail(http.StatusBadRequest, "too much chunked-encoding overhead for the data sent")
	}
	if n == 0 {
		s.st = stTrailerLine
		return 0, nil
	}
	s.st, s.remain = stChunkData, n
	return 0, nil
}

const maxInt64 = 1<<63 - 1
