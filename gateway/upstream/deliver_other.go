//go:build !linux

package upstream

import "net"

// unacked cannot read a socket's send queue here: a write counts as
// delivered once the kernel took it whole (see Transport).
func unacked(net.Conn) (int, error) { return 0, errUnmeasurable }

// notSent cannot read a socket's send queue here either.
func notSent(net.Conn) (int, error) { return 0, errUnmeasurable }
