//go:build linux

package upstream

import (
	"fmt"
	"net"
	"syscall"
	"unsafe"
)

// unacked returns how many bytes written on c its peer's TCP has not yet
// acknowledged, sent or still queued (the SIOCOUTQ ioctl, which is
// TIOCOUTQ's number). errUnmeasurable when c is not a socket; another
// error when the socket cannot be asked (it was closed).
func unacked(c net.Conn) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, errUnmeasurable
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("unacknowledged bytes: %w", err)
	}
	var n int32
	var errno syscall.Errno
	err = rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&n)))
	})
	if err != nil {
		return 0, fmt.Errorf("unacknowledged bytes: %w", err)
	}
	if errno != 0 {
		return 0, fmt.Errorf("unacknowledged bytes: SIOCOUTQ: %w", errno)
	}
	return int(n), nil
}
