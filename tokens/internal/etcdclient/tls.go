package etcdclient

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
)

// tlsFor returns the TLS configuration for endpoints: nil when none
// uses https, system roots when all do, an error when they are mixed (the
// client uses one transport for all of them) or one is empty.
func tlsFor(endpoints []string) (*tls.Config, error) {
	secure := 0
	for _, ep := range endpoints {
		if ep == "" {
			return nil, errors.New("empty endpoint")
		}
		if len(ep) >= len("https://") && strings.EqualFold(ep[:len("https://")], "https://") {
			secure++
		}
	}
	switch secure {
	case 0:
		return nil, nil
	case len(endpoints):
		return &tls.Config{MinVersion: tls.VersionTLS12}, nil
	default:
		return nil, fmt.Errorf("endpoints %s mix https and plaintext", strings.Join(endpoints, ","))
	}
}
