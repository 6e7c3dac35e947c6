package telemetry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc/credentials"
)

// OTLP protocols accepted in OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL.
const (
	protocolGRPC         = "grpc"
	protocolHTTPProtobuf = "http/protobuf"
	protocolHTTPJSON     = "http/json"
)

// otlpConfig is everything the environment says about the OTLP trace
// exporter. Building the exporter passes all of it explicitly, overriding
// what the exporter packages read from the process environment, except that
// gRPC has no explicit "no compression" option.
type otlpConfig struct {
	protocol string
	endpoint *url.URL // http or https; for OTLP/HTTP the full URL including the path
	insecure bool     // plaintext
	headers  map[string]string
	timeout  time.Duration
	gzip     bool
	tls      *tls.Config // nil when insecure
}

// readOTLP reads and validates the OTEL_EXPORTER_OTLP_* variables for
// traces. The TRACES_ variant of each wins over the general one.
func readOTLP(e env) (otlpConfig, error) {
	var c otlpConfig

	v, name := e.otlp("PROTOCOL")
	switch p := strings.ToLower(v); p {
	case "":
		c.protocol = protocolHTTPProtobuf
	case protocolGRPC, protocolHTTPProtobuf, protocolHTTPJSON:
		c.protocol = p
	default:
		return c, &EnvError{Var: name, Err: oneOf("OTLP protocol", p, protocolGRPC, protocolHTTPProtobuf, protocolHTTPJSON)}
	}

	if v := e.get(envOTLPTraces + "ENDPOINT"); v != "" {
		u, err := parseEndpoint(v)
		if err != nil {
			return c, &EnvError{Var: envOTLPTraces + "ENDPOINT", Err: err}
		}
		if u.Path == "" {
			u.Path = "/"
		}
		c.endpoint = u
	} else {
		if v = e.get(envOTLP + "ENDPOINT"); v == "" {
			v = "http://localhost:4318" // the specification's defaults
			if c.protocol == protocolGRPC {
				v = "http://localhost:4317"
			}
		}
		u, err := parseEndpoint(v)
		if err != nil {
			return c, &EnvError{Var: envOTLP + "ENDPOINT", Err: err}
		}
		if c.protocol != protocolGRPC {
			// A base URL: OTLP/HTTP sends traces to <base>/v1/traces.
			u.Path, u.RawPath = path.Join("/", u.Path, "v1/traces"), ""
		}
		c.endpoint = u
	}
	c.insecure = c.endpoint.Scheme == "http"

	switch v, name := e.otlp("INSECURE"); strings.ToLower(v) {
	case "", "false":
	case "true":
		c.insecure = true
	default:
		return c, &EnvError{Var: name, Err: oneOf("boolean", v, "true", "false")}
	}

	c.headers = map[string]string{}
	if v, name := e.otlp("HEADERS"); v != "" {
		h, err := parseHeaders(v)
		if err != nil {
			return c, &EnvError{Var: name, Err: err}
		}
		c.headers = h
	}

	c.timeout = 10 * time.Second
	if d, ok, err := e.millis(e.otlpName("TIMEOUT"), false); err != nil {
		return c, err
	} else if ok {
		c.timeout = d
	}

	switch v, name := e.otlp("COMPRESSION"); strings.ToLower(v) {
	case "", "none":
	case "gzip":
		c.gzip = true
	default:
		return c, &EnvError{Var: name, Err: oneOf("compression", v, "gzip", "none")}
	}

	tlsCfg, err := readTLS(e)
	if err != nil {
		return c, err
	}
	if !c.insecure {
		c.tls = tlsCfg
	}
	return c, nil
}

// otlpName is the name of the variable e.otlp(suffix) reads.
func (e env) otlpName(suffix string) string {
	_, name := e.otlp(suffix)
	return name
}

// parseEndpoint parses an OTLP endpoint, which must be an absolute http or
// https URL with a host.
func parseEndpoint(v string) (*url.URL, error) {
	u, err := url.Parse(v)
	if err != nil {
		return nil, fmt.Errorf("not a URL: %w", err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("not an http:// or https:// URL with a host")
	}
	return u, nil
}

// readTLS reads the certificate variables: a CA bundle replacing the system
// roots, and a client certificate and key for mutual TLS. The TRACES_ pair
// of client variables wins over the general pair as a whole.
func readTLS(e env) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if file, name := e.otlp("CERTIFICATE"); file != "" {
		pem, err := os.ReadFile(file)
		if err != nil {
			return nil, &EnvError{Var: name, Err: err}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &EnvError{Var: name, Err: fmt.Errorf("no PEM certificate in %s", file)}
		}
		cfg.RootCAs = pool
	}
	prefix := envOTLPTraces
	if e.get(prefix+"CLIENT_CERTIFICATE") == "" && e.get(prefix+"CLIENT_KEY") == "" {
		prefix = envOTLP
	}
	certName, keyName := prefix+"CLIENT_CERTIFICATE", prefix+"CLIENT_KEY"
	certFile, keyFile := e.get(certName), e.get(keyName)
	switch {
	case certFile == "" && keyFile == "":
	case certFile == "":
		return nil, &EnvError{Var: certName, Err: fmt.Errorf("unset while %s is set", keyName)}
	case keyFile == "":
		return nil, &EnvError{Var: keyName, Err: fmt.Errorf("unset while %s is set", certName)}
	default:
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, &EnvError{Var: certName, Err: fmt.Errorf("load with %s: %w", keyName, err)}
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// newOTLPExporter builds the OTLP trace exporter described by c. Every
// setting is passed explicitly. No connection is made here.
func newOTLPExporter(ctx context.Context, c otlpConfig) (sdktrace.SpanExporter, error) {
	var (
		exp sdktrace.SpanExporter
		err error
	)
	if c.protocol == protocolGRPC {
		// WithEndpointURL takes the host and sets TLS from the scheme.
		opts := []otlptracegrpc.Option{
			otlptracegrpc.WithEndpointURL(c.endpoint.String()),
			otlptracegrpc.WithHeaders(c.headers),
			otlptracegrpc.WithTimeout(c.timeout),
		}
		if c.gzip {
			opts = append(opts, otlptracegrpc.WithCompressor("gzip"))
		}
		if c.insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		} else {
			opts = append(opts, otlptracegrpc.WithTLSCredentials(credentials.NewTLS(c.tls)))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	} else {
		// WithEndpointURL takes host and path as they are and sets TLS from
		// the scheme.
		opts := []otlptracehttp.Option{
			otlptracehttp.WithEndpointURL(c.endpoint.String()),
			otlptracehttp.WithHeaders(c.headers),
			otlptracehttp.WithTimeout(c.timeout),
			otlptracehttp.WithCompression(otlptracehttp.NoCompression),
			otlptracehttp.WithEncoding(otlptracehttp.EncodingProtobuf),
		}
		if c.gzip {
			opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
		}
		if c.protocol == protocolHTTPJSON {
			opts = append(opts, otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON))
		}
		if c.insecure {
			opts = append(opts, otlptracehttp.WithInsecure())
		} else {
			opts = append(opts, otlptracehttp.WithTLSClientConfig(c.tls))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP span exporter (%s to %s): %w", c.protocol, c.endpoint.Redacted(), err)
	}
	return exp, nil
}
