package upstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"
)

// TestAckSeenAfterDeadlineIsUncertain: a write acknowledged whole but seen
// so only after its deadline (the gateway's process stalled across it: a
// GC pause, CPU throttling, SIGSTOP) may have been acknowledged after the
// lapse, while the kernel went on sending: it is never delivered. Both
// transports answer it as uncertain (502), neither delivered nor cut.
func TestAckSeenAfterDeadlineIsUncertain(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("send queues are read on Linux only")
	}
	client := ackedConn(t)
	past := time.Now().Add(-time.Millisecond)

	c := &upstreamConn{addr: "upstream", conn: client, br: bufio.NewReader(client), bw: bufio.NewWriter(client)}
	err := c.awaitAcked(context.Background(), past)
	if !errors.Is(err, errDeliveryUncertain) || errors.Is(err, errDeliveryCut) {
		t.Errorf("own transport: awaitAcked = %v, want an uncertain delivery", err)
	}

	client = ackedConn(t)
	d := &delivery{by: past, conn: client, known: true, wrote: true, bodyRead: true}
	if st := d.check(); st != deliveryUncertain {
		t.Errorf("net/http's transport: check = %d, want deliveryUncertain (%d)", st, deliveryUncertain)
	}
}

// ackedConn returns a loopback connection whose write its peer has read
// whole, and whose send queue says it is acknowledged.
func ackedConn(t *testing.T) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	read := make(chan struct{})
	go func() {
		s, err := ln.Accept()
		if err != nil {
			return
		}
		defer s.Close()
		io.ReadFull(s, make([]byte, 4096))
		close(read)
		io.Copy(io.Discard, s)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write(make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	<-read
	for deadline := time.Now().Add(5 * time.Second); ; {
		n, err := unacked(c)
		if err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the peer read the write but it is not acknowledged: %d bytes, %v", n, err)
		}
		time.Sleep(time.Millisecond)
	}
	return c
}
