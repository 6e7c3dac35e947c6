package config_test

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/internal/testutil/testtls"
)

// TestListenerTLS12OnlyAEAD: a listener's TLS 1.2 offers forward-secret
// AEAD suites only (no CBC, no SHA-1 MAC, no RSA key exchange); TLS 1.3
// is unaffected.
func TestListenerTLS12OnlyAEAD(t *testing.T) {
	lt := writeListenerCert(t)
	sc, err := lt.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", sc)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { c.(*tls.Conn).Handshake(); c.Close() }()
		}
	}()
	for _, c := range []struct {
		name   string
		max    uint16
		suites []uint16
		ok     bool
	}{
		{"1.2 ECDHE-ECDSA-AES128-CBC-SHA", tls.VersionTLS12, []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}, false},
		{"1.2 ECDHE-ECDSA-AES256-CBC-SHA", tls.VersionTLS12, []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA}, false},
		{"1.2 ECDHE-ECDSA-AES128-GCM-SHA256", tls.VersionTLS12, []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}, true},
		{"1.2 ECDHE-ECDSA-CHACHA20-POLY1305", tls.VersionTLS12, []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}, true},
		{"1.3", tls.VersionTLS13, nil, true},
	} {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(),
			&tls.Config{InsecureSkipVerify: true, MaxVersion: c.max, CipherSuites: c.suites})
		if err == nil {
			conn.Close()
		}
		if (err == nil) != c.ok {
			t.Errorf("%s: handshake error %v, want success %v", c.name, err, c.ok)
		}
	}
}

// writeListenerCert writes a self-signed ECDSA certificate and key for
// 127.0.0.1 and returns a ListenerTLS naming them.
func writeListenerCert(t *testing.T) *config.ListenerTLS {
	t.Helper()
	certFile, keyFile := testtls.WriteFiles(t, t.TempDir())
	return &config.ListenerTLS{CertFile: certFile, KeyFile: keyFile}
}
