package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
)

// ListenerTLS serves a listener over TLS.
type ListenerTLS struct {
	// CertFile and KeyFile are the PEM certificate chain and key.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ClientCAFile, on the control API only, requires client certificates
	// signed by these CAs (mutual TLS).
	ClientCAFile string `yaml:"client_ca_file"`
}

// UpstreamTLS tunes TLS toward a route's https upstream.
type UpstreamTLS struct {
	// CAFile is a PEM bundle of CAs trusted instead of the system's.
	CAFile string `yaml:"ca_file"`
	// ServerName is the name to verify the upstream's certificate against
	// (and to send as SNI) when it differs from the URL's host.
	ServerName string `yaml:"server_name"`
}

func (t *ListenerTLS) validate(at string, clientCAs bool) []error {
	var errs []error
	if t.CertFile == "" || t.KeyFile == "" {
		errs = append(errs, &FieldError{Field: at, Msg: "cert_file and key_file are both required"})
	} else if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
		errs = append(errs, &FieldError{Field: at + ".cert_file", Msg: fmt.Sprintf("cannot load the certificate and key: %v", err)})
	}
	if t.ClientCAFile != "" {
		if !clientCAs {
			errs = append(errs, &FieldError{Field: at + ".client_ca_file", Msg: "client certificates are an option of api_tls only"})
		} else if _, err := loadPool(t.ClientCAFile); err != nil {
			errs = append(errs, &FieldError{Field: at + ".client_ca_file", Msg: err.Error()})
		}
	}
	return errs
}

// tls12Suites are the TLS 1.2 cipher suites a listener offers: forward
// secret (ECDHE) and AEAD only, so no CBC mode, SHA-1 MAC or RSA key
// exchange. TLS 1.3's suites are all AEAD and not configurable.
var tls12Suites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// ServerConfig returns the listener's TLS configuration: TLS 1.2 or later,
// TLS 1.2 with forward-secret AEAD suites only, with client certificates
// required and verified when ClientCAFile is set.
func (t *ListenerTLS) ServerConfig() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, err
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, CipherSuites: slices.Clone(tls12Suites), Certificates: []tls.Certificate{cert}}
	if t.ClientCAFile != "" {
		if c.ClientCAs, err = loadPool(t.ClientCAFile); err != nil {
			return nil, err
		}
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return c, nil
}

// ClientConfig returns the TLS configuration toward an upstream.
func (t *UpstreamTLS) ClientConfig() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pool, err := loadPool(t.CAFile)
		if err != nil {
			return nil, err
		}
		c.RootCAs = pool
	}
	return c, nil
}

func loadPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New(path + " holds no PEM certificate")
	}
	return pool, nil
}
