package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// Control tunes how the control API defends itself within a web
// browser's reach. Whatever it says, a request whose Host is not a name of
// the control API is refused (421), as is one whose Origin is not its own
// (403), and a state change whose body is not application/json (415).
type Control struct {
	// AllowedHosts are host names or IP addresses (no port) the Host
	// header may name besides loopback names and addresses and the address
	// the request arrived on: the names clients reach the control API by
	// (a DNS name, a Kubernetes Service, a compose service). A name that
	// is not listed is refused, which stops DNS rebinding.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// AllowedOrigins are origins (scheme://host[:port]) whose pages may
	// send requests besides the control API's own: those of a proxy in
	// front of the control API that rewrites Host. No CORS headers are
	// sent.
	AllowedOrigins []string `yaml:"allowed_origins"`
}

// validateControl reports every bad entry of c through bad.
func validateControl(c Control, bad func(field, format string, args ...any)) {
	for i, h := range c.AllowedHosts {
		if err := checkAllowedHost(h); err != nil {
			bad(fmt.Sprintf("control.allowed_hosts[%d]", i), "%q: %v", h, err)
		}
	}
	for i, o := range c.AllowedOrigins {
		if err := checkOrigin(o); err != nil {
			bad(fmt.Sprintf("control.allowed_origins[%d]", i), "%q: %v", o, err)
		}
	}
}

// checkAllowedHost accepts an IP address (IPv6 bracketed or not) or a DNS
// name, without port.
func checkAllowedHost(h string) error {
	if _, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return nil
	}
	if h == "" {
		return fmt.Errorf("must be a host name or an IP address")
	}
	if err := checkHostName(h); err != nil {
		return fmt.Errorf("must be a host name (no port, no scheme) or an IP address: %w", err)
	}
	return nil
}

// checkOrigin accepts a web origin: http(s)://host[:port], nothing more.
func checkOrigin(o string) error {
	u, err := url.Parse(o)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("must be http://host[:port] or https://host[:port]")
	case u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("must be an origin: scheme://host[:port], no path, query or user")
	}
	return nil
}
