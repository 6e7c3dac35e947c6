package guard_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fencegw/fencegw/gateway/guard"
	"github.com/fencegw/fencegw/internal/testutil/testtls"
)

// TestTLSGuardListenerHandshakes: a client that never completes its
// handshake holds up no one and is dropped after the handshake timeout;
// Close ends pending handshakes and leaves no goroutine behind.
func TestTLSGuardListenerHandshakes(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tc, pool := testtls.SelfSigned(t)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := guard.NewListener(tcp, guard.ListenerOptions{TLS: tc, HandshakeTimeout: 300 * time.Millisecond})
	silent, err := net.Dial("tcp", tcp.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	client, err := tls.Dial("tcp", tcp.Addr().String(), &tls.Config{RootCAs: pool})
	if err != nil {
		t.Fatalf("handshake behind a silent client: %v", err)
	}
	defer client.Close()
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("Accept waited for the silent client")
	}
	silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("the silent client was not dropped after the handshake timeout: %v", err)
	}

	// Close with a handshake in progress and none accepted.
	pending, err := net.Dial("tcp", tcp.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer pending.Close()
	time.Sleep(50 * time.Millisecond)
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close = %v", err)
	}
	pending.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := pending.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("a pending handshake survived Close: %v", err)
	}
}

func isReset(err error) bool { return err != nil && strings.Contains(err.Error(), "reset") }
