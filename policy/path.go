package policy

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/fencegw/fencegw/tokens"
)

// ErrUncleanPath means a request path holds ".", ".." or empty segments,
// control characters, the characters ";" or "\\", or an encoded separator
// or dot, any of which an upstream might resolve to a path other than the
// one the fence checked (a matrix parameter, a Windows separator, a
// decoded "/").
var ErrUncleanPath = errors.New("request path is not clean")

// ErrBadMethod means the method an upstream reads could differ from the
// one the fence checked: the request line's method is not upper case
// (method names are case-sensitive, RFC 9110, but many servers fold them:
// "post" would reach such an upstream as a POST the fence never checked),
// or the request carries a method override (see CheckMethodOverride).
var ErrBadMethod = errors.New("request method is ambiguous")

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
			return fmt.Errorf("%w: %q is not upper case (send %q)", ErrBadMethod, m, strings.ToUpper(m))
		}
	}
	if m == "" {
		return fmt.Errorf("%w: empty", ErrBadMethod)
	}
	return nil
}

// CheckMethodOverride refuses a request that claims another method than
// its request line's, whatever the method and whatever the claim: Rails
// and Rack, Laravel and Symfony, Express's method-override, ASP.NET and
// JAX-RS honour such claims, so a GET or an unfenced POST carrying one
// could reach the upstream as a DELETE the fence never checked. It looks
// for
//
//   - a method-override header (tokens.MethodOverrideHeaders:
//     X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override), in any
//     spelling ("_" for "-", any case), with any value, empty included;
//   - a "_method" query parameter (Laravel, Symfony, Express), in any
//     encoding or spelling PHP folds into that name ("%5Fmethod",
//     "_METHOD", ".method", "_method[]"), split on "&" or ";".
//
// A "_method" field in a form body is not seen (bodies stream unread):
// frameworks honour it on POST only, which every route fences unless it
// lists its own methods, so such a route must list POST when its upstream
// reads that field.
func CheckMethodOverride(r *http.Request) error {
	for name, v := range r.Header {
		for _, o := range tokens.MethodOverrideHeaders {
			if tokens.SameHeaderKey(name, o) {
				return fmt.Errorf("%w: %s with %s: %q, which some upstreams read as the method; send the method itself in the request line",
					ErrBadMethod, r.Method, name, strings.Join(v, ", "))
			}
		}
	}
	for q := r.URL.RawQuery; q != ""; {
		var kv string
		if i := strings.IndexAny(q, "&;"); i >= 0 {
			kv, q = q[:i], q[i+1:]
		} else {
			kv, q = q, ""
		}
		key, _, _ := strings.Cut(kv, "=")
		if isMethodParam(key) {
			return fmt.Errorf("%w: %s with the query parameter %q, which some upstreams read as the method; send the method itself in the request line",
				ErrBadMethod, r.Method, key)
		}
	}
	return nil
}

// isMethodParam reports whether the raw query key reads as "_method" to a
// lenient parser: decoded ("+" as space), case-blind, with the spaces,
// dots and dashes PHP turns into "_", and any "[...]" suffix dropped.
func isMethodParam(raw string) bool {
	k, err := url.QueryUnescape(raw)
	if err != nil {
		k = raw
	}
	k = strings.ToLower(strings.TrimLeft(k, " "))
	if i := strings.IndexByte(k, '['); i >= 0 {
		k = k[:i]
	}
	k = strings.Map(func(r rune) rune {
		if r == ' ' || r == '.' || r == '-' {
			return '_'
		}
		return r
	}, k)
	return k == "_method"
}
