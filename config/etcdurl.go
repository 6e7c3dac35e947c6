package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrInvalidEtcdURL is wrapped by every error ParseEtcdURL returns.
var ErrInvalidEtcdURL = errors.New("invalid etcd store URL")

// EtcdURL is an etcd store setting, parsed.
type EtcdURL struct {
	// Endpoints are client URLs of cluster members: "host:port" for
	// plaintext, "https://host:port" for TLS.
	Endpoints []string
	// Prefix is the key prefix, ending in "/"; empty for the store's
	// default prefix.
	Prefix string
	// Username and Password authenticate to etcd's auth system.
	Username, Password string
}

// ParseEtcdURL parses an etcd store setting:
//
//	etcd://[user:password@]host:port[,host:port...][/prefix]
//
// The scheme is etcd (or etcd+http) for plaintext and etcd+https for TLS
// verified against the system's root certificates. Each host is a DNS name,
// an IPv4 address or a bracketed IPv6 address; the port is required. User
// and password are percent-encoded as in any URL and must come together.
//
// The path, percent-decoded, is the key prefix; a "/" is appended if it does
// not end with one, so that etcd://h:2379/app and etcd://h:2379/app2 cannot
// share keys. No path, or "/", means the store's default prefix (an empty
// Prefix). Query strings and
// fragments are refused, as is anything else ParseEtcdURL does not
// understand. Errors wrap ErrInvalidEtcdURL, say what is wrong and never
// quote the password.
func ParseEtcdURL(s string) (EtcdURL, error) {
	var o EtcdURL
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return o, invalidURL("missing scheme: want etcd://, etcd+http:// or etcd+https://")
	}
	var secure bool
	switch strings.ToLower(scheme) {
	case "etcd", "etcd+http":
	case "etcd+https":
		secure = true
	default:
		if strings.TrimLeft(strings.ToLower(scheme), "abcdefghijklmnopqrstuvwxyz0123456789+.-") != "" {
			return o, invalidURL("malformed scheme: want etcd, etcd+http or etcd+https")
		}
		return o, invalidURL("unsupported scheme %q: want etcd, etcd+http or etcd+https", truncate(scheme))
	}
	if strings.ContainsRune(rest, '?') {
		return o, invalidURL("query strings are not supported")
	}
	if strings.ContainsRune(rest, '#') {
		return o, invalidURL("fragments are not supported")
	}
	authority, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	if strings.ContainsRune(path, '@') && !strings.ContainsRune(authority, '@') {
		// Most likely a password holding a raw '/': refuse without quoting.
		return o, invalidURL("'@' after the host list: percent-encode '/' in user info and '@' in the prefix")
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		var err error
		if o.Username, o.Password, err = parseUserinfo(authority[:i]); err != nil {
			return EtcdURL{}, err
		}
		authority = authority[i+1:]
	}
	var err error
	if o.Endpoints, err = parseHosts(authority, secure); err != nil {
		return EtcdURL{}, err
	}
	if o.Prefix, err = parsePrefix(path); err != nil {
		return EtcdURL{}, err
	}
	return o, nil
}

func parseUserinfo(s string) (user, password string, err error) {
	rawUser, rawPassword, ok := strings.Cut(s, ":")
	if !ok || rawUser == "" || rawPassword == "" {
		return "", "", invalidURL("user info must be user:password with both set")
	}
	if user, err = url.PathUnescape(rawUser); err != nil {
		return "", "", invalidURL("user name: bad percent-encoding")
	}
	if password, err = url.PathUnescape(rawPassword); err != nil {
		return "", "", invalidURL("password: bad percent-encoding")
	}
	return user, password, nil
}

// parseHosts parses a comma-separated list of host:port into client
// endpoints: "host:port", or "https://host:port" if secure.
func parseHosts(s string, secure bool) ([]string, error) {
	if s == "" {
		return nil, invalidURL("no host:port")
	}
	var eps []string
	seen := map[string]bool{}
	for i, hp := range strings.Split(s, ",") {
		if hp == "" {
			return nil, invalidURL("empty host:port at position %d of the host list", i+1)
		}
		ep, err := parseHostPort(hp)
		if err != nil {
			return nil, err
		}
		if seen[ep] {
			return nil, invalidURL("host %q listed twice", ep)
		}
		seen[ep] = true
		if secure {
			ep = "https://" + ep
		}
		eps = append(eps, ep)
	}
	return eps, nil
}

// parseHostPort validates one host:port and returns it in canonical form.
func parseHostPort(hp string) (string, error) {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return "", invalidURL("host %q: want host:port", truncate(hp))
	}
	if err := checkPort(port); err != nil {
		return "", invalidURL("host %q: %v", truncate(hp), err)
	}
	switch {
	case host == "":
		return "", invalidURL("host %q: empty host name", truncate(hp))
	case strings.HasPrefix(hp, "["):
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" || a.Is4In6() {
			return "", invalidURL("host %q: brackets must hold an IPv6 address without zone", truncate(hp))
		}
	default:
		if err := checkHostName(host); err != nil {
			return "", invalidURL("host %q: %v", truncate(hp), err)
		}
	}
	return net.JoinHostPort(host, port), nil
}

func checkPort(port string) error {
	if port == "" {
		return errors.New("missing port")
	}
	if len(port) > 5 || strings.TrimLeft(port, "0123456789") != "" {
		return fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	if n, _ := strconv.Atoi(port); n < 1 || n > 65535 || port[0] == '0' {
		return fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	return nil
}

// checkHostName accepts DNS names (letters, digits, '-', '_' and dots) and
// IPv4 addresses.
func checkHostName(h string) error {
	if len(h) > 253 {
		return errors.New("host name longer than 253 bytes")
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("character %q not allowed in a host name (IPv6 addresses need brackets)", c)
		}
	}
	if strings.HasPrefix(h, ".") || strings.HasSuffix(h, ".") || strings.Contains(h, "..") {
		return errors.New("empty label in host name")
	}
	if strings.TrimLeft(h, "0123456789.") == "" {
		if _, err := netip.ParseAddr(h); err != nil {
			return errors.New("not a valid IPv4 address")
		}
	}
	return nil
}

// parsePrefix turns the URL path into a key prefix ending in "/".
func parsePrefix(path string) (string, error) {
	if path == "" || path == "/" {
		return "", nil
	}
	p, err := url.PathUnescape(path)
	if err != nil {
		return "", invalidURL("prefix: bad percent-encoding")
	}
	if !utf8.ValidString(p) {
		return "", invalidURL("prefix is not valid UTF-8")
	}
	for _, r := range p {
		if unicode.IsControl(r) {
			return "", invalidURL("prefix contains control character %U", r)
		}
	}
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p, nil
}

func invalidURL(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidEtcdURL, fmt.Sprintf(format, args...))
}

// truncate shortens s for quoting in an error message.
func truncate(s string) string {
	const n = 64
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
