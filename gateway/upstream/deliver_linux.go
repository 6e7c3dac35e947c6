//go:build linux

package upstream

import (
	"fmt"
	"net"
	"syscall"
	"unsafe"
)

// siocoutqnsd is Linux's SIOCOUTQNSD ioctl: the bytes of a TCP socket's
// send queue not yet sent.
const siocoutqnsd = 0x894B

// unacked returns how many bytes written on c its peer's TCP has not yet
// acknowledged, sent or still queued (the SIOCOUTQ ioctl, which is
// TIOCOUTQ's number). errUnmeasurable when c is not a socket; another
// error when the socket cannot be asked (it was closed).
func unacked(c net.Conn) (int, error) { return sendQueue(c, syscall.TIOCOUTQ, "SIOCOUTQ") }

// notSent returns how many bytes written on c have not yet been sent at
// all (SIOCOUTQNSD): held by the peer's closed window or our congestion
// window. A reset drops them, so the peer never receives them. Errors as
// unacked's.
func notSent(c net.Conn) (int, error) { return sendQueue(c, siocoutqnsd, "SIOCOUTQNSD") }

// sendQueue asks c's socket the ioctl req, which reports a byte count.
func sendQueue(c net.Conn, req uintptr, name string) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, errUnmeasurable
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("send queue: %w", err)
	}
	var n int32
	var errno syscall.Errno
	err = rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(unsafe.Pointer(&n)))
	})
	if err != nil {
		return 0, fmt.Errorf("send queue: %w", err)
	}
	if errno != 0 {
		return 0, fmt.Errorf("send queue: %s: %w", name, errno)
	}
	return int(n), nil
}
