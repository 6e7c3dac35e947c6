package policy

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/fencegw/fencegw/tokens"
)

// ErrUnresolved means a request's resource could not be named: a segment
// or header the template names is missing or empty, or the header that
// names it is ambiguous. It is the domain's tokens.ErrNoResource.
var ErrUnresolved = tokens.ErrNoResource

// ErrAmbiguousHeader means the header that names a request's resource
// could reach the upstream as another value than the fence read: a twin
// spelling, a Connection listing, a list value. It wraps ErrUnresolved.
var ErrAmbiguousHeader = fmt.Errorf("%w: its header is ambiguous", ErrUnresolved)

// Render names the resource of req, whose path is under prefix, by t.
func Render(t *tokens.Template, req *http.Request, prefix string) (string, error) {
	if s, ok := t.Static(); ok {
		return s, nil // no view to build
	}
	return t.Render(&requestView{req: req, prefix: prefix})
}

// requestView shows a template the request's path below its route's
// prefix and its resource headers.
type requestView struct {
	req    *http.Request
	prefix string
	segs   []string
}

func (v *requestView) Segment(n int) (string, error) {
	if v.segs == nil {
		sub, ok := Subpath(v.req.URL.Path, v.prefix)
		if !ok {
			return "", fmt.Errorf("%w: path %q is not under %q", ErrUnresolved, v.req.URL.Path, v.prefix)
		}
		v.segs = strings.Split(sub[1:], "/")
	}
	if n > len(v.segs) || v.segs[n-1] == "" {
		return "", fmt.Errorf("%w: path has no segment %d after %q", ErrUnresolved, n, v.prefix)
	}
	return v.segs[n-1], nil
}

func (v *requestView) Header(name string) (string, error) { return headerValue(v.req.Header, name) }
