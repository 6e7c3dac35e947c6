package policy

import (
	"fmt"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/fencegw/fencegw/tokens"
)

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
	key := tokens.HeaderKey(name)
	for k := range h {
		if k != name && tokens.HeaderKey(k) == key {
			return "", fmt.Errorf("%w: %s and %s name the same header to some servers", ErrAmbiguousHeader, name, k)
		}
	}
	for _, c := range h["Connection"] {
		for _, tok := range strings.Split(c, ",") {
			if tokens.HeaderKey(textproto.TrimString(tok)) == key {
				return "", fmt.Errorf("%w: %s is listed in Connection, so the proxy would not forward it", ErrAmbiguousHeader, name)
			}
		}
	}
	if strings.ContainsRune(v[0], ',') {
		return "", fmt.Errorf("%w: the %s value holds a comma, which some servers read as a list", ErrAmbiguousHeader, name)
	}
	return v[0], nil
}
