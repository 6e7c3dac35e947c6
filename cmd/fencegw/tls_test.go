package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCA issues certificates for the TLS tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fencegw test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a PEM certificate and key for name (server and client use).
func (ca *testCA) issue(t *testing.T, name string) (certPEM, keyPEM []byte) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		DNSNames: []string{name}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// TestTLSEverywhere: the proxy over TLS, the control API over mutual TLS,
// and TLS to an upstream trusted through a custom CA and server name.
func TestTLSEverywhere(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	caFile := writeFile(t, dir, "ca.pem", ca.pem)
	gwCert, gwKey := ca.issue(t, "gateway.test")
	clientCert, clientKey := ca.issue(t, "ops-client")
	upCert, upKey := ca.issue(t, "upstream.internal")

	pair, err := tls.X509KeyPair(upCert, upKey)
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	up.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	up.StartTLS()
	defer up.Close()

	cfg := writeFile(t, dir, "gw.yaml", []byte(fmt.Sprintf(`
store: %q
tls:
  cert_file: %q
  key_file: %q
api_tls:
  cert_file: %q
  key_file: %q
  client_ca_file: %q
routes:
  - prefix: "/trusted/"
    upstream: %q
    tokens: raw
    tls:
      ca_file: %q
      server_name: upstream.internal
  - prefix: "/untrusted/"
    upstream: %q
    tokens: raw
`, filepath.Join(dir, "s.db"), writeFile(t, dir, "gw.crt", gwCert), writeFile(t, dir, "gw.key", gwKey),
		filepath.Join(dir, "gw.crt"), filepath.Join(dir, "gw.key"), caFile, up.URL, caFile, up.URL)))

	proxyAddr, apiAddr := freeAddr(t), freeAddr(t)
	cmd := exec.Command(binary, "serve", "--config", cfg, "--listen", proxyAddr, "--api-listen", apiAddr)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.pem)
	clientPair, _ := tls.X509KeyPair(clientCert, clientKey)
	withCert := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots,
		Certificates: []tls.Certificate{clientPair}, ServerName: "gateway.test"}}}
	noCert := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots,
		ServerName: "gateway.test"}}}

	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := withCert.Get("https://" + apiAddr + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway not up over mTLS: %v\n%s", err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if resp, err := noCert.Get("https://" + apiAddr + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("the control API answered a client without a certificate")
	}
	write := func(path string) int {
		req, _ := http.NewRequest("POST", "https://"+proxyAddr+path, strings.NewReader("x"))
		req.Header.Set("Fencing-Token", "1")
		req.Header.Set("Fencing-Resource", "r")
		resp, err := noCert.Do(req)
		if err != nil {
			t.Fatalf("POST %s over TLS: %v", path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := write("/trusted/x"); s != http.StatusCreated {
		t.Fatalf("upstream trusted through ca_file and server_name = %d\n%s", s, stderr.String())
	}
	if s := write("/untrusted/x"); s != http.StatusBadGateway {
		t.Fatalf("upstream with an unknown CA = %d, want 502", s)
	}

	// The CLI reaches the control API over mutual TLS with its --tls-*
	// flags: the probe, and a lease command.
	api := "https://" + apiAddr
	clientCertFile, clientKeyFile := writeFile(t, dir, "client.crt", clientCert), writeFile(t, dir, "client.key", clientKey)
	withTLS := []string{"--api", api, "--tls-ca", caFile, "--tls-server-name", "gateway.test"}
	withCertFlags := append(append([]string(nil), withTLS...), "--tls-cert", clientCertFile, "--tls-key", clientKeyFile)
	if out, errOut, code := probeRun(t, nil, withCertFlags...); code != 0 {
		t.Errorf("probe over mutual TLS: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code := probeRun(t, nil, withTLS...)
	wantNotReady(t, "probe without a client certificate", out, errOut, code, "not ready")
	out, errOut, code = probeRun(t, nil, "--api", api, "--tls-cert", clientCertFile, "--tls-key", clientKeyFile)
	wantNotReady(t, "probe without the CA", out, errOut, code, "not ready", "certificate")
	out, errOut, code = runCLI(t, append([]string{"lease", "acquire", "jobs", "--holder", "node-a"}, withCertFlags...)...)
	if code != 0 || !strings.Contains(out, `"epoch":"1"`) {
		t.Errorf("lease acquire over mutual TLS: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
