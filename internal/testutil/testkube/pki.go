package testkube

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// The files a Server keeps in its directory.
const (
	certFile   = "serving.crt"
	keyFile    = "serving.key"
	saKeyFile  = "sa.key"
	tokensFile = "tokens.csv"
	kubeconfig = "kubeconfig"
	logFile    = "kube-apiserver.log"
)

// writePKI writes a self-signed serving certificate for 127.0.0.1 and
// localhost with its key, the service-account signing key (RSA) and a
// token file that makes token a member of system:masters.
func writePKI(dir, token string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "testkube"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		certFile:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyFile:    pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		saKeyFile:  pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(sa)}),
		tokensFile: fmt.Appendf(nil, "%s,testkube-admin,testkube-admin,\"system:masters\"\n", token),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// writeKubeconfig writes a kubeconfig for server that trusts the serving
// certificate and authenticates with token.
func writeKubeconfig(dir, server, token string) error {
	ca, err := os.ReadFile(filepath.Join(dir, certFile))
	if err != nil {
		return err
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: testkube
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: testkube-admin
  user:
    token: %s
contexts:
- name: testkube
  context:
    cluster: testkube
    user: testkube-admin
current-context: testkube
`, server, base64.StdEncoding.EncodeToString(ca), token)
	return os.WriteFile(filepath.Join(dir, kubeconfig), []byte(cfg), 0o600)
}

// copyFile copies the file from to a new file to, readable by its owner
// only.
func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o600)
}
