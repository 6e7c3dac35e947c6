package policy

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUncleanPath means a request path holds ".", ".." or empty segments,
// control characters, the characters ";" or "\\", or an encoded separator
// or dot, any of which an upstream might resolve to a path other than the
// one the fence checked (a matrix parameter, a Windows separator, a
// decoded "/").
var ErrUncleanPath = errors.New("request path is not clean")

// ErrBadMethod means a request method is not an upper-case token. Method
// names are case-sensitive (RFC 9110), but many servers fold them: "post"
// would reach such an upstream as a POST the fence never checked.
var ErrBadMethod = errors.New("request method is not upper case")

// CheckPath refuses decoded paths that are not in canonical form, so a
// request cannot reach an upstream path under one route while matching
// another.
func CheckPath(p string) error {
	if p == "" || p[0] != '/' {
		return fmt.Errorf("%w: %q does not start with /", ErrUncleanPath, p)
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "." || seg == ".." {
			return fmt.Errorf("%w: %q has a %q segment", ErrUncleanPath, p, seg)
		}
	}
	if strings.Contains(p, "//") {
		return fmt.Errorf("%w: %q has an empty segment", ErrUncleanPath, p)
	}
	if i := strings.IndexAny(p, ";\\"); i >= 0 {
		return fmt.Errorf("%w: %q holds %q", ErrUncleanPath, p, p[i])
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] == 0x7f {
			return fmt.Errorf("%w: %q holds the control character %#02x", ErrUncleanPath, p, p[i])
		}
	}
	return nil
}

// CheckEscapedPath refuses a path as sent on the wire (url.URL.EscapedPath)
// that encodes a separator or a dot: %2F, %5C or %2E in either case. Such a
// path decodes to one path for the fence and may stay another for an
// upstream that splits before decoding ("a%2Fb" is one segment to it, two
// to the fence). Other escapes decode the same everywhere and are kept.
func CheckEscapedPath(escaped string) error {
	for i := strings.IndexByte(escaped, '%'); i >= 0; {
		if i+2 < len(escaped) {
			switch strings.ToUpper(escaped[i+1 : i+3]) {
			case "2F", "5C", "2E":
				return fmt.Errorf("%w: %q encodes %q; send it unencoded or not at all", ErrUncleanPath, escaped, escaped[i:i+3])
			}
		}
		j := strings.IndexByte(escaped[i+1:], '%')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return nil
}

// CheckMethod refuses a method that holds lower-case letters. Every method
// the gateway forwards is then exactly the name its routes compare.
func CheckMethod(m string) error {
	for i := 0; i < len(m); i++ {
		if 'a' <= m[i] && m[i] <= 'z' {
			return fmt.Errorf("%w: %q (send %q)", ErrBadMethod, m, strings.ToUpper(m))
		}
	}
	if m == "" {
		return fmt.Errorf("%w: empty", ErrBadMethod)
	}
	return nil
}
