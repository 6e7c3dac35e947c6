package guard

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/gateway/problem"
)

// scanResult is what a scanner made of a stream.
type scanResult struct {
	events []string // "head@12", "message@40 body=5"
	ends   []int64  // where each whole request ended
	bodies []int64  // each whole request's body length
	err    *problem.FramingError
}

// scanPieces feeds data to a fresh scanner in pieces of the sizes next
// returns, and records what it reports.
func scanPieces(data []byte, maxHead int, next func() int) scanResult {
	s := newFramingScanner(maxHead)
	var r scanResult
	for len(data) > 0 {
		piece := data[:min(max(next(), 1), len(data))]
		data = data[len(piece):]
		for len(piece) > 0 {
			n, ev, err := s.feed(piece)
			piece = piece[n:]
			if ev&evHead != 0 {
				r.events = append(r.events, fmt.Sprintf("head@%d", s.pos))
			}
			if ev&evMessage != 0 {
				r.events = append(r.events, fmt.Sprintf("message@%d body=%d", s.pos, s.req.bodyLen))
				r.ends = append(r.ends, s.pos)
				r.bodies = append(r.bodies, s.req.bodyLen)
			}
			if err != nil {
				r.err = err.(*problem.FramingError)
				return r
			}
		}
	}
	return r
}

func scanAll(data []byte, maxHead int) scanResult {
	return scanPieces(data, maxHead, func() int { return len(data) })
}

func sameResult(a, b scanResult) bool {
	return fmt.Sprint(a.events) == fmt.Sprint(b.events) && fmt.Sprint(a.err) == fmt.Sprint(b.err)
}

// netHTTPReads parses data with net/http.ReadRequest as a server would,
// reading every body, and returns the body lengths.
func netHTTPReads(data []byte) ([]int64, error) {
	br := bufio.NewReader(bytes.NewReader(data))
	var bodies []int64
	for {
		if _, err := br.Peek(1); err == io.EOF {
			return bodies, nil
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			return bodies, fmt.Errorf("request %d: %w", len(bodies), err)
		}
		n, err := io.Copy(io.Discard, req.Body)
		if err != nil {
			return bodies, fmt.Errorf("request %d body: %w", len(bodies), err)
		}
		bodies = append(bodies, n)
	}
}

const head = "Host: gw\r\n"

var validStreams = []struct {
	name, data string
	bodies     []int64
}{
	{"get", "GET /a?b=c HTTP/1.1\r\n" + head + "\r\n", []int64{0}},
	{"post", "POST /email/send HTTP/1.1\r\n" + head + "Content-Length: 5\r\n\r\nhello", []int64{5}},
	{"http/1.0 without host", "GET / HTTP/1.0\r\n\r\n", []int64{0}},
	{"chunked with extensions and trailers", "POST / HTTP/1.1\r\n" + head + "Transfer-Encoding: Chunked\r\n\r\n" +
		"5;name=value;flag;q=\"a \\\" b\"\r\nhello\r\n000A\r\n0123456789\r\n0;last\r\nChecksum: abc\r\nX-T: 1\r\n\r\n", []int64{15}},
	{"pipelined", "GET /1 HTTP/1.1\r\n" + head + "\r\n" +
		"POST /2 HTTP/1.1\r\n" + head + "Content-Length:3\r\n\r\nabc" +
		"PUT /3 HTTP/1.1\r\n" + head + "Transfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n" +
		"DELETE /4 HTTP/1.1\r\n" + head + "Content-Length: 0\r\n\r\n", []int64{0, 3, 1, 0}},
	{"options asterisk", "OPTIONS * HTTP/1.1\r\n" + head + "\r\n", []int64{0}},
	{"absolute-form", "GET http://gw:8080/x?y HTTP/1.1\r\n" + head + "\r\n", []int64{0}},
	{"connect", "CONNECT gw:443 HTTP/1.1\r\n" + head + "\r\n", []int64{0}},
	{"values with obs-text, tabs and colons", "GET / HTTP/1.1\r\n" + head + "X-A: \t caf\xc3\xa9 : a\tb \r\nX-Empty:\r\n\r\n", []int64{0}},
	{"upgrade", "GET /ws HTTP/1.1\r\n" + head + "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n", []int64{0}},
	{"leading zeros", "POST / HTTP/1.1\r\n" + head + "Content-Length: 007\r\n\r\n1234567", []int64{7}},
}

// TestFramingScannerAcceptsValidStreams: valid streams give the requests
// net/http reads from them, whether fed at once or a byte at a time.
func TestFramingScannerAcceptsValidStreams(t *testing.T) {
	for _, c := range validStreams {
		t.Run(c.name, func(t *testing.T) {
			data := []byte(c.data)
			all := scanAll(data, 8192)
			if all.err != nil {
				t.Fatalf("refused: %v", all.err)
			}
			if fmt.Sprint(all.bodies) != fmt.Sprint(c.bodies) || all.ends[len(all.ends)-1] != int64(len(data)) {
				t.Fatalf("bodies %v ends %v, want bodies %v ending at %d", all.bodies, all.ends, c.bodies, len(data))
			}
			if bytewise := scanPieces(data, 8192, func() int { return 1 }); !sameResult(all, bytewise) {
				t.Fatalf("byte at a time %v %v, at once %v %v", bytewise.events, bytewise.err, all.events, all.err)
			}
			got, err := netHTTPReads(data)
			if err != nil || fmt.Sprint(got) != fmt.Sprint(c.bodies) {
				t.Fatalf("net/http reads bodies %v, err %v", got, err)
			}
		})
	}
}

// TestFramingScannerRefusesViolations: each violation gets its status and
// a detail naming it, also when the stream arrives a byte at a time, and
// no request after the last valid one is reported whole.
func TestFramingScannerRefusesViolations(t *testing.T) {
	post := "POST / HTTP/1.1\r\n" + head
	chunked := post + "Transfer-Encoding: chunked\r\n\r\n"
	cases := []struct {
		name, data string
		status     int
		detail     string
	}{
		{"CL then TE", post + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "both Transfer-Encoding and Content-Length"},
		{"TE then CL", post + "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400, "both Transfer-Encoding and Content-Length"},
		{"equal duplicate CL", post + "Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 400, "more than one Content-Length"},
		{"differing duplicate CL", post + "Content-Length: 3\r\ncontent-length: 4\r\n\r\nabcd", 400, "more than one Content-Length"},
		{"CL list", post + "Content-Length: 3, 3\r\n\r\nabc", 400, "Content-Length \"3, 3\""},
		{"CL sign", post + "Content-Length: +3\r\n\r\nabc", 400, "is not 1 to 19 decimal digits"},
		{"CL empty", post + "Content-Length:\r\n\r\n", 400, "is not 1 to 19 decimal digits"},
		{"CL 20 digits", post + "Content-Length: 00000000000000000001\r\n\r\n", 400, "is not 1 to 19"},
		{"CL above 2^63", post + "Content-Length: 9223372036854775808\r\n\r\n", 400, "below 2^63"},
		{"two TE fields", post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "more than one Transfer-Encoding"},
		{"TE gzip", post + "Transfer-Encoding: gzip\r\n\r\n", 501, "unsupported transfer coding \"gzip\""},
		{"TE gzip, chunked", post + "Transfer-Encoding: gzip, chunked\r\n\r\n", 501, "unsupported transfer coding"},
		{"TE chunked twice", post + "Transfer-Encoding: chunked, chunked\r\n\r\n", 400, "chunked applied more than once"},
		{"TE malformed", post + "Transfer-Encoding: chunked;q=1\r\n\r\n", 400, "malformed Transfer-Encoding"},
		{"TE in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "Transfer-Encoding in an HTTP/1.0 request"},
		{"obs-fold", "GET / HTTP/1.1\r\n" + head + "Fencing-Resource: r\r\n s\r\n\r\n", 400, "obsolete line folding"},
		{"obs-fold with tab", "GET / HTTP/1.1\r\n" + head + "X: r\r\n\ts\r\n\r\n", 400, "obsolete line folding"},
		{"whitespace first field", "GET / HTTP/1.1\r\n " + head + "\r\n", 400, "obsolete line folding"},
		{"bare LF request line", "GET / HTTP/1.1\n" + head + "\r\n", 400, "bare LF ending the request line"},
		{"bare LF header", "GET / HTTP/1.1\r\nHost: gw\n\r\n", 400, "bare LF ending a header field line"},
		{"bare LF head end", "GET / HTTP/1.1\r\n" + head + "\n", 400, "bare LF ending a header field line"},
		{"bare CR header", "GET / HTTP/1.1\r\nHost: gw\rX: y\r\n\r\n", 400, "bare CR in a header field line"},
		{"bare CR request line", "GET /\r HTTP/1.1\r\n" + head + "\r\n", 400, "bare CR in the request line"},
		{"bare LF chunk line", chunked + "3\nabc\r\n0\r\n\r\n", 400, "bare LF ending a chunk-size line"},
		{"bare LF after chunk data", chunked + "3\r\nabc\n0\r\n\r\n", 400, "chunk data is not followed by CRLF"},
		{"chunk data too long", chunked + "3\r\nabcd\r\n0\r\n\r\n", 400, "chunk data is not followed by CRLF"},
		{"bare LF last chunk", chunked + "0\n\r\n", 400, "bare LF ending a chunk-size line"},
		{"bare LF end of trailers", chunked + "0\r\n\n", 400, "bare LF ending a trailer field line"},
		{"chunk size not hex", chunked + "x\r\n", 400, "does not start with a hex size"},
		{"chunk size empty", chunked + "\r\n", 400, "does not start with a hex size"},
		{"chunk size 17 digits", chunked + "00000000000000001\r\nx\r\n0\r\n\r\n", 400, "more than 16 hex digits"},
		{"chunk size overflow", chunked + "8000000000000000\r\n", 400, "overflows"},
		{"chunk size negative", chunked + "-1\r\n", 400, "does not start with a hex size"},
		{"space before extension", chunked + "1 ;a\r\nx\r\n0\r\n\r\n", 400, "invalid chunk extension"},
		{"trailing space", chunked + "1 \r\nx\r\n0\r\n\r\n", 400, "invalid chunk extension"},
		{"empty extension", chunked + "1;\r\nx\r\n0\r\n\r\n", 400, "invalid chunk extension"},
		{"extension without value", chunked + "1;a=\r\nx\r\n0\r\n\r\n", 400, "invalid chunk extension"},
		{"unterminated quoted extension", chunked + "1;a=\"x\r\nx\r\n0\r\n\r\n", 400, "invalid chunk extension"},
		{"obs-fold in trailer", chunked + "0\r\nX: a\r\n b\r\n\r\n", 400, "obsolete line folding: a trailer field line"},
		{"framing field in trailer", chunked + "0\r\nContent-Length: 5\r\n\r\n", 400, "Content-Length in the trailer section"},
		{"missing host", "GET / HTTP/1.1\r\n\r\n", 400, "without a Host field"},
		{"two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "more than one Host field"},
		{"invalid host", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "invalid Host \"a b\""},
		{"space before colon", "GET / HTTP/1.1\r\n" + head + "Content-Length : 3\r\n\r\nabc", 400, "whitespace between the field name and the colon"},
		{"no colon", "GET / HTTP/1.1\r\n" + head + "Broken\r\n\r\n", 400, "a field line without a colon"},
		{"empty name", "GET / HTTP/1.1\r\n" + head + ": x\r\n\r\n", 400, "an empty field name"},
		{"bad name", "GET / HTTP/1.1\r\n" + head + "X(1): x\r\n\r\n", 400, "invalid character in the field name \"X(\""},
		{"NUL in value", "GET / HTTP/1.1\r\n" + head + "X: a\x00b\r\n\r\n", 400, "control character in the value of the field \"X\""},
		{"DEL in value", "GET / HTTP/1.1\r\n" + head + "X: a\x7fb\r\n\r\n", 400, "control character"},
		{"bad method", "G(T / HTTP/1.1\r\n" + head + "\r\n", 400, "invalid method"},
		{"lowercase version", "GET / http/1.1\r\n" + head + "\r\n", 400, "malformed HTTP version \"http/1.1\""},
		{"HTTP/2.0", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400, "malformed HTTP version"},
		{"space in target", "GET /a b HTTP/1.1\r\n" + head + "\r\n", 400, "malformed HTTP version \"b HTTP/1.1\""},
		{"double space", "GET  / HTTP/1.1\r\n" + head + "\r\n", 400, "an empty request target"},
		{"tab in target", "GET /a\tb HTTP/1.1\r\n" + head + "\r\n", 400, "control character or whitespace in the request target"},
		{"relative target", "GET a/b HTTP/1.1\r\n" + head + "\r\n", 400, "neither a path"},
		{"asterisk with GET", "GET * HTTP/1.1\r\n" + head + "\r\n", 400, "asterisk-form"},
		{"bad percent-encoding", "GET /a%zz HTTP/1.1\r\n" + head + "\r\n", 400, "invalid percent-encoding"},
		{"bad absolute-form", "GET http://gw:x/ HTTP/1.1\r\n" + head + "\r\n", 400, "does not parse"},
		{"empty line first", "\r\nGET / HTTP/1.1\r\n" + head + "\r\n", 400, "an empty line where a request line belongs"},
		{"no request line", "GET\r\n\r\n", 400, "not method SP target SP version"},
		{"head too long", "GET / HTTP/1.1\r\n" + head + "X: " + strings.Repeat("a", 300) + "\r\n\r\n", 431, "exceeds 256 bytes"},
		{"line longer than the head", "GET /" + strings.Repeat("a", 300), 431, "exceeds 256 bytes"},
		{"chunk line too long", chunked + "1;" + strings.Repeat("a", 1100) + "\r\nx\r\n0\r\n\r\n", 400, "chunk-size line exceeds 1024 bytes"},
		{"trailers too long", chunked + "0\r\n" + strings.Repeat("X: "+strings.Repeat("a", 95)+"\r\n", 41) + "\r\n", 400, "trailer section exceeds 4096 bytes"},
		{"chunked overhead", chunked + strings.Repeat("1;"+strings.Repeat("e", 100)+"\r\nx\r\n", 200) + "0\r\n\r\n", 400, "too much chunked-encoding overhead"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			valid := "GET /before HTTP/1.1\r\n" + head + "\r\n"
			data := []byte(valid + c.data)
			maxHead := 8192
			if c.status == 431 {
				maxHead = 256
			}
			all := scanAll(data, maxHead)
			if all.err == nil {
				t.Fatalf("accepted: %v", all.events)
			}
			if all.err.Status != c.status || !strings.Contains(all.err.Detail, c.detail) {
				t.Fatalf("%d %q, want %d with %q", all.err.Status, all.err.Detail, c.status, c.detail)
			}
			if len(all.ends) != 1 || all.ends[0] != int64(len(valid)) {
				t.Fatalf("whole requests ending at %v, want only the valid one before", all.ends)
			}
			if bytewise := scanPieces(data, maxHead, func() int { return 1 }); !sameResult(all, bytewise) {
				t.Fatalf("byte at a time %v %v, at once %v %v", bytewise.events, bytewise.err, all.events, all.err)
			}
		})
	}
}

// TestFramingScannerLimitsMatchNetHTTP: the limits on parts net/http reads
// through its 4 KiB buffer are within what net/http accepts, and net/http
// refuses what goes past its own.
func TestFramingScannerLimitsMatchNetHTTP(t *testing.T) {
	chunked := "POST / HTTP/1.1\r\n" + head + "Transfer-Encoding: chunked\r\n\r\n"
	trailers := func(n int) string { // a trailer section of exactly n bytes
		return "0\r\nX: " + strings.Repeat("a", n-len("X: \r\n\r\n")) + "\r\n\r\n"
	}
	for _, c := range []struct {
		name    string
		data    string
		scanner bool // the scanner accepts it
		nethttp bool // net/http reads it
	}{
		{"trailers at the limit", chunked + trailers(trailerMax), true, true},
		{"trailers past net/http's limit", chunked + trailers(trailerMax+1), false, false},
		{"chunk line at the limit", chunked + "1;" + strings.Repeat("a", chunkLineMax-5) + "\r\nx\r\n0\r\n\r\n", true, true},
		{"chunk line past net/http's limit", chunked + "1;" + strings.Repeat("a", 4100) + "\r\nx\r\n0\r\n\r\n", false, false},
		{"overhead under net/http's limit", chunked + strings.Repeat("1;"+strings.Repeat("e", 100)+"\r\nx\r\n", 150) + "0\r\n\r\n", true, true},
		{"overhead over net/http's limit", chunked + strings.Repeat("1;"+strings.Repeat("e", 100)+"\r\nx\r\n", 200) + "0\r\n\r\n", false, false},
	} {
		r := scanAll([]byte(c.data), 8192)
		_, err := netHTTPReads([]byte(c.data))
		if (r.err == nil) != c.scanner || (err == nil) != c.nethttp {
			t.Errorf("%s: scanner error %v (want accepted %v), net/http error %v (want accepted %v)", c.name, r.err, c.scanner, err, c.nethttp)
		}
	}
}

// TestFramingScannerStopsAtBoundaries: feed returns right after a head and
// after a request, and safe never lets a partial head or chunk line out.
func TestFramingScannerStopsAtBoundaries(t *testing.T) {
	h := "POST / HTTP/1.1\r\n" + head + "Transfer-Encoding: chunked\r\n\r\n"
	data := []byte(h + "3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\n")
	s := newFramingScanner(8192)
	n, ev, err := s.feed(data)
	if err != nil || ev != evHead || n != len(h) || s.safe() != int64(len(h)) {
		t.Fatalf("feed = %d %v %v, safe %d; want the head of %d bytes", n, ev, err, s.safe(), len(h))
	}
	m, ev, err := s.feed(data[n : n+2]) // "3\r": a partial chunk-size line
	if err != nil || ev != 0 || m != 2 || s.safe() != int64(len(h)) {
		t.Fatalf("partial chunk line: %d %v %v, safe %d", m, ev, err, s.safe())
	}
	n += m
	m, ev, err = s.feed(data[n : n+3]) // "\nab": the line ends, data streams
	if err != nil || ev != 0 || s.safe() != int64(n+m) {
		t.Fatalf("chunk data: %d %v %v, safe %d, want %d", m, ev, err, s.safe(), n+m)
	}
	n += m
	m, ev, err = s.feed(data[n:])
	if err != nil || ev != evMessage || s.req.bodyLen != 3 {
		t.Fatalf("end: %d %v %v body %d", m, ev, err, s.req.bodyLen)
	}
	n += m
	if _, _, err = s.feed(data[n:]); err != nil || s.safe() != int64(n) {
		t.Fatalf("a partial next head: %v, safe %d, want %d", err, s.safe(), n)
	}
	var fe *problem.FramingError
	_, _, err = s.feed([]byte("\n"))
	if !errors.As(err, &fe) || fe.Status != 400 {
		t.Fatalf("bare LF = %v", err)
	}
	if n, _, again := s.feed([]byte("x")); n != 0 || again != err {
		t.Fatalf("after a violation: %d %v", n, again)
	}
}

// benchRequest is a typical fenced write: a 40-byte POST with 8 headers.
const benchRequest = "POST /email/send HTTP/1.1\r\nHost: gateway.internal:8080\r\nUser-Agent: sweeper/1.4 (go)\r\n" +
	"Accept: application/json\r\nAccept-Encoding: gzip\r\nContent-Type: application/json\r\n" +
	"Fencing-Token: 1234567\r\nFencing-Resource: invoice-sweeper\r\nContent-Length: 40\r\n\r\n" +
	`{"to":"a@example.com","subject":"hi!!!"}`

// BenchmarkFramingScanner measures the scanner on one connection's stream
// of typical writes, each arriving whole.
//
//	go test -run '^$' -bench BenchmarkFramingScanner -benchmem ./gateway
func BenchmarkFramingScanner(b *testing.B) {
	req := []byte(benchRequest)
	s := newFramingScanner(http.DefaultMaxHeaderBytes + 4096)
	b.SetBytes(int64(len(req)))
	b.ReportAllocs()
	for b.Loop() {
		p := req
		for len(p) > 0 {
			n, _, err := s.feed(p)
			if err != nil {
				b.Fatal(err)
			}
			p = p[n:]
		}
	}
}
