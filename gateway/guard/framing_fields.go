package guard

import (
	"bytes"
	"encoding/binary"
	"net/http"
	"net/url"
	"strconv"
)

// requestLine checks method SP request-target SP HTTP-version (no CRLF).
func (s *framingScanner) requestLine(b []byte) error {
	if len(b) == 0 {
		return s.fail(http.StatusBadRequest, "an empty line where a request line belongs")
	}
	method, rest, ok := bytes.Cut(b, []byte{' '})
	target, version, ok2 := bytes.Cut(rest, []byte{' '})
	if !ok || !ok2 {
		return s.fail(http.StatusBadRequest, "the request line is not method SP target SP version: %s", quote(b))
	}
	if !isToken(method) {
		return s.fail(http.StatusBadRequest, "invalid method %s", quote(method))
	}
	if len(target) == 0 {
		return s.fail(http.StatusBadRequest, "an empty request target")
	}
	switch string(version) {
	case "HTTP/1.1":
	case "HTTP/1.0":
		s.req.http10 = true
	default:
		return s.fail(http.StatusBadRequest, "unsupported or malformed HTTP version %s", quote(version))
	}
	return s.requestTarget(method, target)
}

// requestTarget checks the target's form (RFC 9112 section 3.2): origin-form
// with valid percent-encoding in the path, asterisk-form for OPTIONS only,
// authority-form for CONNECT and absolute-form, both as net/url parses them
// for net/http.
func (s *framingScanner) requestTarget(method, t []byte) error {
	for _, c := range t {
		if c <= ' ' || c == 0x7f {
			return s.fail(http.StatusBadRequest, "a control character or whitespace in the request target %s", quote(t))
		}
	}
	switch {
	case t[0] == '/':
		path, _, _ := bytes.Cut(t, []byte{'?'})
		for i := 0; i < len(path); i++ {
			if path[i] == '%' && (i+2 >= len(path) || !isHex(path[i+1]) || !isHex(path[i+2])) {
				return s.fail(http.StatusBadRequest, "invalid percent-encoding in the request target %s", quote(t))
			}
		}
	case len(t) == 1 && t[0] == '*':
		if string(method) != http.MethodOptions {
			return s.fail(http.StatusBadRequest, "the asterisk-form target with method %s (OPTIONS only)", quote(method))
		}
		s.req.asterisk = true
	case string(method) == http.MethodConnect:
		// Rare: net/url may allocate here.
		if _, err := url.ParseRequestURI("http://" + string(t)); err != nil {
			return s.fail(http.StatusBadRequest, "the CONNECT target %s is not an authority", quote(t))
		}
	case hasScheme(t):
		if _, err := url.ParseRequestURI(string(t)); err != nil {
			return s.fail(http.StatusBadRequest, "the absolute-form target %s does not parse", quote(t))
		}
	default:
		return s.fail(http.StatusBadRequest, "the request target %s is neither a path, an absolute URI, an authority (CONNECT) nor * (OPTIONS)", quote(t))
	}
	return nil
}

// field splits a field line (no CRLF) into name and value, OWS trimmed.
func (s *framingScanner) field(b []byte) (name, value []byte, err error) {
	if b[0] == ' ' || b[0] == '\t' {
		return nil, nil, s.fail(http.StatusBadRequest, "obsolete line folding: %s starts with whitespace", s.where())
	}
	i := 0
	for i < len(b) && isTchar(b[i]) {
		i++
	}
	switch {
	case i == len(b):
		return nil, nil, s.fail(http.StatusBadRequest, "a field line without a colon: %s", quote(b))
	case b[i] != ':' && (b[i] == ' ' || b[i] == '\t'):
		return nil, nil, s.fail(http.StatusBadRequest, "whitespace between the field name and the colon in %s", quote(b))
	case b[i] != ':':
		return nil, nil, s.fail(http.StatusBadRequest, "invalid character in the field name %s", quote(b[:i+1]))
	case i == 0:
		return nil, nil, s.fail(http.StatusBadRequest, "an empty field name in %s", quote(b))
	}
	name, value = b[:i], trimOWS(b[i+1:])
	if !validFieldValue(value) {
		return nil, nil, s.fail(http.StatusBadRequest, "a control character in the value of the field %s", quote(name))
	}
	return name, value, nil
}

// validFieldValue reports whether v holds no control character but HTAB
// (RFC 9110 section 5.5), eight bytes at a time.
func validFieldValue(v []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(v) >= 8 {
		x := binary.LittleEndian.Uint64(v)
		// Some byte below 0x20, or some byte 0x7f (zero after the xor)?
		if y := x ^ 0x7f*ones; (x-0x20*ones)&^x&highs != 0 || (y-ones)&^y&highs != 0 {
			break // look closer: HTAB is allowed
		}
		v = v[8:]
	}
	for _, c := range v {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// framingField records a Content-Length or Transfer-Encoding field, name,
// whose seen flag is seen: a request may carry one of them, once. A second
// field of either kind fails the scan (400).
func (s *framingScanner) framingField(name string, seen *bool) error {
	switch {
	case *seen:
		return s.fail(http.StatusBadRequest, "more than one %s field", name)
	case s.req.cl || s.req.te:
		return s.fail(http.StatusBadRequest, "both Transfer-Encoding and Content-Length")
	}
	*seen = true
	return nil
}

// headerField checks a header field line and records the fields that
// frame the request.
func (s *framingScanner) headerField(b []byte) error {
	name, value, err := s.field(b)
	if err != nil {
		return err
	}
	switch {
	case equalFold(name, "Content-Length"):
		if err := s.framingField("Content-Length", &s.req.cl); err != nil {
			return err
		}
		n, ok := parseLength(value)
		if !ok {
			return s.fail(http.StatusBadRequest, "Content-Length %s is not 1 to 19 decimal digits below 2^63", quote(value))
		}
		s.req.length = n
	case equalFold(name, "Transfer-Encoding"):
		if err := s.framingField("Transfer-Encoding", &s.req.te); err != nil {
			return err
		}
		if s.req.http10 {
			return s.fail(http.StatusBadRequest, "Transfer-Encoding in an HTTP/1.0 request")
		}
		return s.transferCoding(value)
	case equalFold(name, "Host"):
		if s.req.hosts++; s.req.hosts > 1 {
			return s.fail(http.StatusBadRequest, "more than one Host field")
		}
		for _, c := range value {
			if !isHostByte(c) {
				return s.fail(http.StatusBadRequest, "invalid Host %s", quote(value))
			}
		}
	case equalFold(name, "Upgrade"):
		s.req.upgrade = true
	}
	return nil
}

// transferCoding accepts exactly "chunked"; a list of other codings is
// 501, anything else 400.
func (s *framingScanner) transferCoding(v []byte) error {
	if equalFold(v, "chunked") {
		return nil
	}
	unknown := false
	for _, c := range bytes.Split(v, []byte{','}) { // rare: allocates
		c = trimOWS(c)
		if !isToken(c) {
			return s.fail(http.StatusBadRequest, "malformed Transfer-Encoding %s", quote(v))
		}
		unknown = unknown || !equalFold(c, "chunked")
	}
	if !unknown {
		return s.fail(http.StatusBadRequest, "chunked applied more than once in Transfer-Encoding %s", quote(v))
	}
	return s.fail(http.StatusNotImplemented, "unsupported transfer coding %s (only chunked is implemented)", quote(v))
}

// trailerField checks a trailer field line; fields that frame or route a
// request are not allowed there (RFC 9110 section 6.5.1).
func (s *framingScanner) trailerField(b []byte) error {
	name, _, err := s.field(b)
	if err != nil {
		return err
	}
	for _, f := range []string{"Content-Length", "Transfer-Encoding", "Host"} {
		if equalFold(name, f) {
			return s.fail(http.StatusBadRequest, "%s in the trailer section", f)
		}
	}
	return nil
}

// validChunkExt reports whether b is *( ";" token [ "=" ( token /
// quoted-string ) ] ), without whitespace outside quoted strings.
func validChunkExt(b []byte) bool {
	for len(b) > 0 {
		if b[0] != ';' {
			return false
		}
		n := tokenLen(b[1:])
		if n == 0 {
			return false
		}
		b = b[1+n:]
		if len(b) == 0 || b[0] != '=' {
			continue
		}
		b = b[1:]
		if n = tokenLen(b); n == 0 {
			if n = quotedLen(b); n == 0 {
				return false
			}
		}
		b = b[n:]
	}
	return true
}

// quotedLen returns the length of the quoted-string b starts with, 0 if
// none.
func quotedLen(b []byte) int {
	if len(b) == 0 || b[0] != '"' {
		return 0
	}
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			if i++; i == len(b) || !isQuotedPairByte(b[i]) {
				return 0
			}
		case !isQdtext(c):
			return 0
		}
	}
	return 0
}

// parseLength parses 1 to 19 decimal digits below 2^63.
func parseLength(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return int64(n), n <= maxInt64
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// equalFold reports whether b equals the ASCII string s, ignoring case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// Byte classes as 128-bit masks: lo holds bytes 0-63, hi bytes 64-127.
const (
	digitsLo  = (1<<10 - 1) << '0'
	lettersHi = (1<<26-1)<<('A'-64) | (1<<26-1)<<('a'-64)
	// tchar (RFC 9110 section 5.6.2).
	tcharLo = digitsLo | 1<<'!' | 1<<'#' | 1<<'$' | 1<<'%' | 1<<'&' | 1<<'\'' | 1<<'*' | 1<<'+' | 1<<'-' | 1<<'.'
	tcharHi = lettersHi | 1<<('^'-64) | 1<<('_'-64) | 1<<('`'-64) | 1<<('|'-64) | 1<<('~'-64)
	// net/http's bytes allowed in a Host value.
	hostLo = digitsLo | 1<<'!' | 1<<'$' | 1<<'%' | 1<<'&' | 1<<'\'' | 1<<'(' | 1<<')' | 1<<'*' | 1<<'+' | 1<<',' |
		1<<'-' | 1<<'.' | 1<<':' | 1<<';' | 1<<'='
	hostHi = lettersHi | 1<<('['-64) | 1<<(']'-64) | 1<<('_'-64) | 1<<('~'-64)
)

func inClass(c byte, lo, hi uint64) bool {
	m := lo
	if c >= 64 {
		m = hi
	}
	return c < 128 && m>>(c&63)&1 != 0
}

// isTchar reports whether c may appear in a token (RFC 9110 section 5.6.2).
func isTchar(c byte) bool { return inClass(c, tcharLo, tcharHi) }

func tokenLen(b []byte) int {
	n := 0
	for n < len(b) && isTchar(b[n]) {
		n++
	}
	return n
}

func isToken(b []byte) bool { return len(b) > 0 && tokenLen(b) == len(b) }

// isHostByte reports whether net/http allows c in a Host value.
func isHostByte(c byte) bool { return inClass(c, hostLo, hostHi) }

func isQdtext(c byte) bool {
	return c == '\t' || c == ' ' || c == 0x21 || 0x23 <= c && c <= 0x5b || 0x5d <= c && c <= 0x7e || c >= 0x80
}

func isQuotedPairByte(c byte) bool { return c == '\t' || c >= ' ' && c != 0x7f }

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func hexValue(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// hasScheme reports whether b starts with a URI scheme and a colon.
func hasScheme(b []byte) bool {
	if len(b) == 0 || !('a' <= lower(b[0]) && lower(b[0]) <= 'z') {
		return false
	}
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == ':':
			return true
		case !isAlnum(c) && c != '+' && c != '-' && c != '.':
			return false
		}
	}
	return false
}

// quote returns a short, escaped, ASCII rendering of b for a problem detail.
func quote(b []byte) string {
	const max = 40
	if len(b) <= max {
		return strconv.QuoteToASCII(string(b))
	}
	return strconv.QuoteToASCII(string(b[:max])) + "..."
}
