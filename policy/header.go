package policy

import (
	"fmt"
	"net/http"
	"net/textproto"
	"strings"
)

// reserved are the headers, by headerKey, that cannot name a resource:
// hop-by-hop headers the proxy removes (RFC 9110 §7.6.1 and the ones Go's
// reverse proxy drops), framing and host fields net/http consumes, and the
// fencing headers the gateway rewrites. The upstream would not receive any
// of them as the fence read it.
var reserved = map[string]bool{
	"connection": true, "proxy-connection": true, "keep-alive": true, "proxy-authenticate": true,
	"proxy-authorization": true, "te": true, "trailer": true, "transfer-encoding": true, "upgrade": true,
	"host": true, "content-length": true,
	"fencing-token": true, "fencing-epoch": true,
}

// headerKey folds a header name the way lenient servers do: case-blind,
// with "_" read as "-" (CGI, and servers that map headers to variables).
func headerKey(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "_", "-")
}

// headerValue returns the value of the header that names a resource,
// refusing every form in which an upstream could read another value than
// the fence did: a missing, empty or repeated header; a twin spelled
// differently (X_Tenant beside X-Tenant); a header listed in Connection,
// which the proxy would drop; a value with a comma, which list-minded
// servers split. name is canonical.
func headerValue(h http.Header, name string) (string, error) {
	v := h[name]
	if len(v) != 1 || v[0] == "" {
		return "", fmt.Errorf("%w: want exactly one non-empty %s header, got %d", ErrUnresolved, name, len(v))
	}
	key := headerKey(name)
	for k := range h {
		if k != name && headerKey(k) == key {
			return "", fmt.Errorf("%w: %s and %s name the same header to some servers", ErrAmbiguousHeader, name, k)
		}
	}
	for _, c := range h["Connection"] {
		for _, tok := range strings.Split(c, ",") {
			if headerKey(textproto.TrimString(tok)) == key {
				return "", fmt.Errorf("%w: %s is listed in Connection, so the proxy would not forward it", ErrAmbiguousHeader, name)
			}
		}
	}
	if strings.ContainsRune(v[0], ',') {
		return "", fmt.Errorf("%w: the %s value holds a comma, which some servers read as a list", ErrAmbiguousHeader, name)
	}
	return v[0], nil
}
