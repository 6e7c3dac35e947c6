//go:build unix

package guard

import (
	"net"
	"syscall"
)

// PeerOpen reports whether an idle connection is still open at the other
// end, with nothing unread on it: a non-blocking peek that sees no FIN,
// no reset and no stray bytes.
func PeerOpen(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		// Only "nothing to read yet" means open: a 0-byte read is the
		// upstream's FIN, a byte read is one it should not have sent.
		_, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK
		return true // answered: do not wait for readability
	})
	return err == nil && open
}
