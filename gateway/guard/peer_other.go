//go:build !unix

package guard

import "net"

// PeerOpen cannot peek here; a connection the upstream closed while idle
// is found on use (and a replayable request retried).
func PeerOpen(net.Conn) bool { return true }
