package gateway_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/guard"

	"go.uber.org/goleak"

	"github.com/fencegw/fencegw/gateway"
)

// selfSigned returns a server configuration offering h2 and http/1.1 with
// a certificate for 127.0.0.1, and the pool that trusts it.
func selfSigned(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		NextProtos: []string{"h2", "http/1.1"}}, pool
}

// TestGuardedTLS: over TLS, HTTP/1.1 framing attacks are refused and reach
// nothing, HTTP/1.1 writes are forwarded as https, and HTTP/2 still works.
func TestGuardedTLS(t *testing.T) {
	tc, pool := selfSigned(t)
	up := newRawUpstream(t)
	addr := guardedGateway(t, up, tc)
	dial := func() (net.Conn, error) {
		return tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}})
	}
	for _, a := range framingAttacks {
		checkRefused(t, exchange(t, dial, a.pieces...), a.status, a.typ)
	}
	if whole, n := up.received(); n != 0 {
		t.Fatalf("the upstream received %d bytes (%q)", n, whole)
	}
	for _, h2 := range []bool{false, true} {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: h2}
		if !h2 {
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		}
		req, _ := http.NewRequest("POST", "https://"+addr+"/email/send", strings.NewReader("x"))
		req.Header.Set(gateway.TokenHeader, "5")
		req.Header.Set(gateway.ResourceHeader, "r")
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("h2 %v: %v", h2, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		tr.CloseIdleConnections()
		if want := map[bool]int{false: 1, true: 2}[h2]; resp.StatusCode != http.StatusCreated || resp.ProtoMajor != want {
			t.Fatalf("h2 %v: %d over HTTP/%d, want 201 over HTTP/%d", h2, resp.StatusCode, resp.ProtoMajor, want)
		}
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if strings.Join(up.proto, ",") != "https,https" {
		t.Fatalf("X-Forwarded-Proto %q, want https for both", up.proto)
	}
}

// TestTLSGuardListenerHandshakes: a client that never completes its
// handshake holds up no one and is dropped after the handshake timeout;
// Close ends pending handshakes and leaves no goroutine behind.
func TestTLSGuardListenerHandshakes(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tc, pool := selfSigned(t)
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
