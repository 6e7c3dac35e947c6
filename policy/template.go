package policy

import (
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/fencegw/fencegw/tokens"
)

// Template names a request's resource. It is literal text with
// placeholders:
//
//	{segment:N}   the Nth path segment after the route's prefix (1-based)
//	{header:Name} the value of request header Name
//
// For example "tenant-{segment:1}" on prefix "/tenants/" names
// "tenant-42" for the path /tenants/42/mail.
type Template struct {
	src   string
	parts []part
}

type partKind int

const (
	literal partKind = iota
	segment
	header
)

type part struct {
	kind    partKind
	text    string // literal text, or the canonical header name
	segment int    // 1-based segment index
}

// ErrUnresolved means a request's resource could not be named: a segment
// or header the template names is missing or empty, or the header that
// names it is ambiguous. It is the domain's tokens.ErrNoResource.
var ErrUnresolved = tokens.ErrNoResource

// ErrAmbiguousHeader means the header that names a request's resource
// could reach the upstream as another value than the fence read: a twin
// spelling, a Connection listing, a list value. It wraps ErrUnresolved.
var ErrAmbiguousHeader = fmt.Errorf("%w: its header is ambiguous", ErrUnresolved)

// ParseTemplate parses src. Errors say what is wrong and where.
func ParseTemplate(src string) (*Template, error) {
	if src == "" {
		return nil, errors.New("empty template")
	}
	t := &Template{src: src}
	rest := src
	for rest != "" {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			t.parts = append(t.parts, part{kind: literal, text: rest})
			break
		}
		if rest[open] == '}' {
			return nil, fmt.Errorf("unmatched '}' at offset %d", len(src)-len(rest)+open)
		}
		if open > 0 {
			t.parts = append(t.parts, part{kind: literal, text: rest[:open]})
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return nil, fmt.Errorf("unclosed '{' at offset %d", len(src)-len(rest)+open)
		}
		p, err := parsePlaceholder(rest[open+1 : open+end])
		if err != nil {
			return nil, fmt.Errorf("placeholder at offset %d: %w", len(src)-len(rest)+open, err)
		}
		t.parts = append(t.parts, p)
		rest = rest[open+end+1:]
	}
	return t, nil
}

func parsePlaceholder(s string) (part, error) {
	kind, arg, ok := strings.Cut(s, ":")
	if !ok || arg == "" {
		return part{}, fmt.Errorf("{%s}: want {segment:N} or {header:Name}", s)
	}
	switch kind {
	case "segment":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 || n > 64 {
			return part{}, fmt.Errorf("{%s}: segment index must be an integer from 1 to 64", s)
		}
		return part{kind: segment, segment: n}, nil
	case "header":
		for i := 0; i < len(arg); i++ {
			if !isTokenChar(arg[i]) {
				return part{}, fmt.Errorf("{%s}: %q is not a valid header name", s, arg)
			}
		}
		name := textproto.CanonicalMIMEHeaderKey(arg)
		if reserved[headerKey(name)] {
			return part{}, fmt.Errorf("{%s}: %s cannot name a resource: the proxy does not forward it as received", s, name)
		}
		return part{kind: header, text: name}, nil
	default:
		return part{}, fmt.Errorf("{%s}: unknown placeholder kind %q", s, kind)
	}
}

// isTokenChar reports whether c may appear in an HTTP header name (RFC 9110 token).
func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// String returns the template's source.
func (t *Template) String() string { return t.src }

// Static reports whether the template has no placeholders, and if so its text.
func (t *Template) Static() (string, bool) {
	if len(t.parts) == 1 && t.parts[0].kind == literal {
		return t.parts[0].text, true
	}
	return "", false
}

// HasHeader reports whether the template reads a request header.
func (t *Template) HasHeader() bool {
	for _, p := range t.parts {
		if p.kind == header {
			return true
		}
	}
	return false
}

// Render names the resource of req, whose path starts with prefix. It
// returns an error wrapping ErrUnresolved when a placeholder has no value.
func (t *Template) Render(req *http.Request, prefix string) (string, error) {
	if s, ok := t.Static(); ok {
		return s, nil
	}
	var segs []string
	var b strings.Builder
	for _, p := range t.parts {
		switch p.kind {
		case literal:
			b.WriteString(p.text)
		case segment:
			if segs == nil {
				sub, ok := Subpath(req.URL.Path, prefix)
				if !ok {
					return "", fmt.Errorf("%w: path %q is not under %q", ErrUnresolved, req.URL.Path, prefix)
				}
				segs = strings.Split(sub[1:], "/")
			}
			if p.segment > len(segs) || segs[p.segment-1] == "" {
				return "", fmt.Errorf("%w: path has no segment %d after %q", ErrUnresolved, p.segment, prefix)
			}
			b.WriteString(segs[p.segment-1])
		case header:
			v, err := headerValue(req.Header, p.text)
			if err != nil {
				return "", err
			}
			b.WriteString(v)
		}
	}
	return b.String(), nil
}
