package tokens

import (
	"errors"
	"fmt"
	"net/textproto"
	"strconv"
	"strings"
)

// Template says how a write names its resource. It is literal text with
// placeholders:
//
//	{segment:N}   the Nth path segment after the route's prefix (1-based)
//	{header:Name} the value of request header Name
//
// For example "tenant-{segment:1}" on prefix "/tenants/" names
// "tenant-42" for the path /tenants/42/mail. A front end supplies the
// values through a TemplateRequest.
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
	if err := ValidateResource(t.sample()); err != nil {
		return nil, fmt.Errorf("its text cannot be part of a name: %w", err)
	}
	return t, nil
}

// sample renders t with "x" for every placeholder: text that no request
// can turn into a valid name (a control or format character, an outer
// space) fails ValidateResource here already.
func (t *Template) sample() string {
	var b strings.Builder
	for _, p := range t.parts {
		if p.kind == literal {
			b.WriteString(p.text)
		} else {
			b.WriteByte('x')
		}
	}
	return b.String()
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
		if why := ReservedHeader(name); why != "" {
			return part{}, fmt.Errorf("{%s}: %s cannot name a resource: %s, so the upstream would not receive it as the fence read it", s, name, why)
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

// TemplateRequest is what a template reads a write's resource from.
type TemplateRequest interface {
	// Segment returns the nth path segment below the route's prefix
	// (1-based); an error wraps ErrNoResource when there is none.
	Segment(n int) (string, error)
	// Header returns the one unambiguous value of the header name
	// (canonical); an error wraps ErrNoResource when there is none.
	Header(name string) (string, error)
}

// Render names the resource of the write r describes. Its error wraps
// ErrNoResource when a placeholder has no value.
func (t *Template) Render(r TemplateRequest) (string, error) {
	if s, ok := t.Static(); ok {
		return s, nil
	}
	var b strings.Builder
	for _, p := range t.parts {
		var v string
		var err error
		switch p.kind {
		case literal:
			v = p.text
		case segment:
			v, err = r.Segment(p.segment)
		case header:
			v, err = r.Header(p.text)
		}
		if err != nil {
			return "", err
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

// ReservedHeader says why the header name (any case, "_" for "-") cannot
// name a resource, or returns "" if it can. A header is reserved when the
// upstream would not receive it exactly as the client sent it, so a fence
// reading the client's value would check another request than the one
// forwarded:
//
//   - hop-by-hop headers, which the reverse proxy removes (RFC 9110
//     section 7.6.1) and, for TE and Upgrade, sets again itself;
//   - the framing, host and expectation fields, which the HTTP server
//     consumes and the transport writes anew;
//   - the forwarding headers, which the proxy deletes and replaces with
//     its own (Forwarded, X-Forwarded-For, X-Forwarded-Host,
//     X-Forwarded-Proto);
//   - the W3C trace context and baggage, which the gateway's transport
//     replaces with its own span's;
//   - the fencing headers, which the gateway removes and sets itself;
//   - the method-override headers, whose requests the gateway refuses;
//   - the unfenced routing headers, which the gateway removes
//     (StrippedHeaders).
func ReservedHeader(name string) string {
	return reservedHeaders[HeaderKey(name)]
}

const (
	whyHopByHop = "it is a hop-by-hop header, which the proxy removes"
	whyServer   = "the HTTP server consumes it and the transport writes its own"
	whyForward  = "the proxy replaces it with its own forwarding header"
	whyTrace    = "the gateway replaces it with its own trace context"
	whyFencing  = "the gateway replaces it with its own fencing header"
	whyOverride = "it overrides the method, and the gateway refuses requests carrying it"
	whyStripped = "it can reroute the request upstream, and the gateway removes it"
)

// reservedHeaders maps a reserved header's HeaderKey to the reason it is.
var reservedHeaders = func() map[string]string {
	m := map[string]string{
		"connection": whyHopByHop, "proxy-connection": whyHopByHop, "keep-alive": whyHopByHop,
		"proxy-authenticate": whyHopByHop, "proxy-authorization": whyHopByHop, "te": whyHopByHop,
		"trailer": whyHopByHop, "transfer-encoding": whyHopByHop, "upgrade": whyHopByHop,

		"host": whyServer, "content-length": whyServer, "expect": whyServer,

		"forwarded": whyForward, "x-forwarded-for": whyForward, "x-forwarded-host": whyForward,
		"x-forwarded-proto": whyForward,

		"traceparent": whyTrace, "tracestate": whyTrace, "baggage": whyTrace,

		"fencing-token": whyFencing, "fencing-epoch": whyFencing, "fencing-resource": whyFencing,
	}
	for _, h := range MethodOverrideHeaders {
		m[h] = whyOverride
	}
	for _, h := range StrippedHeaders {
		m[h] = whyStripped
	}
	return m
}()

// StrippedHeaders are the headers, by HeaderKey, through which servers in
// front of an application, or the application itself, take another path
// (X-Original-URL, X-Rewrite-URL: IIS, Symfony, Zend), client address
// (X-Real-IP: nginx's realip) or external port and prefix
// (X-Forwarded-Port, X-Forwarded-Prefix: Spring, Traefik) than the
// request's own. The fence never checked what they say, so the gateway
// removes them, in any spelling, before forwarding; requests carrying them
// are not refused, since clients and proxies before the gateway set them
// in good faith.
//
// Besides those five, the list holds the other names such servers read for
// the same things: the original path or URL (nginx's X-Original-URI,
// X-Forwarded-Uri, X-Forwarded-Path, Envoy's and Azure's originals), host
// (X-Original-Host, X-Host, X-Forwarded-Server, X-HTTP-Host-Override),
// client address (True-Client-IP, X-Client-IP, CF-Connecting-IP,
// X-Cluster-Client-IP), scheme (X-Forwarded-Ssl, Front-End-Https,
// X-Url-Scheme, X-Forwarded-Scheme) and method (X-Original-Method).
var StrippedHeaders = []string{"x-original-url", "x-rewrite-url", "x-real-ip", "x-forwarded-port", "x-forwarded-prefix",
	"x-original-uri", "x-forwarded-uri", "x-forwarded-path", "x-envoy-original-path", "x-ms-original-url",
	"x-original-host", "x-host", "x-forwarded-server", "x-http-host-override",
	"true-client-ip", "x-client-ip", "cf-connecting-ip", "x-cluster-client-ip",
	"x-forwarded-ssl", "front-end-https", "x-url-scheme", "x-forwarded-scheme",
	"x-original-method"}

// MethodOverrideHeaders are the headers, by HeaderKey, through which
// common frameworks (Rails and Rack, Laravel and Symfony, Express's
// method-override, ASP.NET, JAX-RS) let a request claim another method
// than its request line's. The gateway refuses requests carrying any of
// them (policy.CheckMethodOverride).
var MethodOverrideHeaders = []string{"x-http-method-override", "x-http-method", "x-method-override"}

// HeaderKey folds a header name the way lenient servers do: case-blind,
// with "_" read as "-" (CGI, and servers that map headers to variables).
func HeaderKey(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "_", "-")
}

// SameHeaderKey reports whether HeaderKey(name) == key, for a key already
// in that form (lower case, "-"), without allocating.
func SameHeaderKey(name, key string) bool {
	if len(name) != len(key) {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_':
			c = '-'
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		if c != key[i] {
			return false
		}
	}
	return true
}
