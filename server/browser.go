package server

import (
	"net"
	"net/netip"

	"github.com/fencegw/fencegw/gateway/control"

	"github.com/fencegw/fencegw/config"
)

// browserOptions are the control API's defences against web pages: the
// Host names it answers to are control.allowed_hosts and the host of
// api_listen when that names one (a name, or an address other than
// 0.0.0.0 and ::); loopback names and addresses, and the address each
// request arrived on, are accepted by the gateway itself, so a control API
// listening on every address answers by each of the machine's addresses
// but by no name it is not told of.
func browserOptions(c config.Config) control.BrowserOptions {
	hosts := append([]string(nil), c.Control.AllowedHosts...)
	if h, _, err := net.SplitHostPort(c.APIListen); err == nil && h != "" {
		if ip, err := netip.ParseAddr(h); err != nil || !ip.IsUnspecified() {
			hosts = append(hosts, h)
		}
	}
	return control.BrowserOptions{AllowedHosts: hosts, AllowedOrigins: c.Control.AllowedOrigins}
}
