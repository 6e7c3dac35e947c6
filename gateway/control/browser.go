package control

import (
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/fencegw/fencegw/gateway/problem"
)

// BrowserOptions keep the control API safe within a web browser's reach:
// from a page of another site (cross-site request forgery) and from a page
// whose name was made to resolve to the control API (DNS rebinding).
type BrowserOptions struct {
	// AllowedHosts are the host names and addresses (without port) the
	// Host header may name besides those always accepted: loopback names
	// ("localhost", "*.localhost") and addresses, and the address the
	// request arrived on.
	AllowedHosts []string
	// AllowedOrigins are the origins (scheme://host[:port]) an Origin
	// header may name besides the control API's own: the origins of pages
	// served through a proxy that rewrites Host, say. No CORS headers are
	// sent: a browser page of such an origin reads no answer unless it is
	// served from the same origin.
	AllowedOrigins []string
}

// StrictTransportSecurity is the Strict-Transport-Security header the
// control API sends with every answer over TLS: browsers that saw it use
// HTTPS for the host for a year.
const StrictTransportSecurity = "max-age=31536000"

// guardBrowser is middleware refusing requests a browser was tricked into
// sending: a Host that is not a name of this control API (421, DNS
// rebinding) and an Origin that is not its own or allowed (403, a page of
// another site). Requests without Origin (curl, the Go clients) are
// judged by their Host only. Over TLS every answer carries
// Strict-Transport-Security.
func (o BrowserOptions) guardBrowser(next http.Handler) http.Handler {
	hosts := map[string]bool{}
	for _, h := range o.AllowedHosts {
		hosts[canonicalHost(h)] = true
	}
	origins := map[string]bool{}
	for _, v := range o.AllowedOrigins {
		if c, ok := canonicalOrigin(v); ok {
			origins[c] = true
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil {
			w.Header().Set("Strict-Transport-Security", StrictTransportSecurity)
		}
		if !hostAccepted(r, hosts) {
			problem.WriteError(w, r, problem.Refuse(problem.KindMisdirected, "the Host "+quoteHeader(r.Host)+
				" is not a name of this control API: use a loopback name or address, or list it in control.allowed_hosts"))
			return
		}
		if !originAccepted(r, origins) {
			problem.WriteError(w, r, problem.Refuse(problem.KindCrossOrigin, "requests from pages of "+quoteHeader(r.Header.Get("Origin"))+
				" are refused: list the origin in control.allowed_origins to admit it"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostAccepted reports whether r's Host names this control API: a
// loopback name or address, the address r arrived on, or one of hosts. A
// request without Host (HTTP/1.0) is no browser's and is accepted.
func hostAccepted(r *http.Request, hosts map[string]bool) bool {
	if r.Host == "" {
		return true
	}
	h := canonicalHost(r.Host)
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || hosts[h] {
		return true
	}
	ip, err := netip.ParseAddr(h)
	if err != nil {
		return false
	}
	ip = ip.Unmap().WithZone("")
	if ip.IsLoopback() {
		return true
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	ap, err := netip.ParseAddrPort(local.String())
	return err == nil && ap.Addr().Unmap().WithZone("") == ip
}

// canonicalHost returns host (with or without a port, an IPv6 address
// bracketed or not) without its port, in lower case, without a trailing
// dot, an IP address in its canonical form.
func canonicalHost(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap().WithZone("").String()
	}
	return host
}

// originAccepted reports whether r carries no Origin, or one Origin that
// is the control API's own (the scheme r arrived with and its Host) or in
// origins. "null" (a sandboxed or opaque origin) is never accepted.
func originAccepted(r *http.Request, origins map[string]bool) bool {
	vs := r.Header.Values("Origin")
	if len(vs) == 0 {
		return true
	}
	if len(vs) > 1 {
		return false
	}
	got, ok := canonicalOrigin(vs[0])
	if !ok {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	own, ok := canonicalOrigin(scheme + "://" + r.Host)
	return (ok && got == own) || origins[got]
}

// canonicalOrigin returns origin as scheme://host[:port] in lower case,
// without the scheme's default port; false when it is no http(s) origin.
func canonicalOrigin(origin string) (string, bool) {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", false
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == "" || (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		return scheme + "://" + host, true
	}
	return scheme + "://" + host + ":" + port, true
}

// requireJSON is middleware for the requests that change state: one that
// has a body, or says what its body is, must say Content-Type:
// application/json (415 otherwise). No web page can send that to another
// site without the site's consent (a CORS preflight this API never
// grants), where an HTML form can send text/plain. A request without a
// body and without Content-Type (DELETE) passes.
func requireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct := r.Header.Get("Content-Type")
		hasBody := r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody
		if ct == "" && !hasBody {
			next.ServeHTTP(w, r)
			return
		}
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			problem.WriteError(w, r, problem.Refuse(problem.KindUnsupportedMedia, "send the body as Content-Type: application/json, not "+quoteHeader(ct)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// quoteHeader quotes a header value for a problem's detail, cut at 100
// bytes.
func quoteHeader(v string) string {
	if len(v) > 100 {
		v = v[:100] + "…"
	}
	return `"` + strings.ToValidUTF8(strings.Map(func(c rune) rune {
		if c < 0x20 || c == 0x7f || c == '"' {
			return '?'
		}
		return c
	}, v), "?") + `"`
}
