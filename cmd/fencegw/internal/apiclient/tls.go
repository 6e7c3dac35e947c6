package apiclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLS names the files of a TLS connection to a control API served with
// api_tls. The zero value uses the system's roots and no client
// certificate.
type TLS struct {
	// CAFile is a PEM bundle of CAs trusted instead of the system's.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and its key, for a
	// control API that requires them (api_tls.client_ca_file). Both or
	// neither.
	CertFile, KeyFile string
	// ServerName is the name the server's certificate is checked against
	// when it differs from the URL's host (such as a probe of 127.0.0.1).
	ServerName string
}

// IsZero reports whether t sets nothing.
func (t TLS) IsZero() bool { return t == TLS{} }

// Config loads the files and returns the client's TLS configuration (TLS
// 1.2 or later), or nil when t sets nothing.
func (t TLS) Config() (*tls.Config, error) {
	if t.IsZero() {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", t.CAFile)
		}
	}
	switch {
	case (t.CertFile == "") != (t.KeyFile == ""):
		return nil, errors.New("a client certificate needs both its certificate file and its key file")
	case t.CertFile != "":
		pair, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}
