package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/fencegw/fencegw/cmd/fencegw/internal/apiclient"
)

// defaultAPI is the control API the subcommands call unless --api or
// $FENCEGW_API says otherwise: api_listen's default.
const defaultAPI = "http://127.0.0.1:8081"

// apiFlags are the flags of the subcommands that call the control API
// (lease, token inspect, probe): its address and how to reach it over TLS.
type apiFlags struct {
	api string
	key string // --api-key, for the commands that take one
	tls apiclient.TLS
}

// addAPIFlags defines --api, the TLS flags and, with withKey, --api-key.
func addAPIFlags(fs *pflag.FlagSet, withKey bool) *apiFlags {
	f := &apiFlags{}
	fs.StringVar(&f.api, "api", envOr("FENCEGW_API", defaultAPI), "control API base `URL` ($FENCEGW_API when set)")
	if withKey {
		// The environment's key is read at the call, not made the flag's
		// default: --help would print it.
		fs.StringVar(&f.key, "api-key", "", "API `key` (default $FENCEGW_API_KEY)")
	}
	fs.StringVar(&f.tls.CAFile, "tls-ca", "", "PEM `file` of the CAs to trust for an https --api (default: the system's)")
	fs.StringVar(&f.tls.CertFile, "tls-cert", "", "PEM client certificate `file`, when api_tls.client_ca_file requires one")
	fs.StringVar(&f.tls.KeyFile, "tls-key", "", "PEM `file` of the client certificate's key")
	fs.StringVar(&f.tls.ServerName, "tls-server-name", "", "`name` to check the control API's certificate against, if not --api's host")
	return f
}

// check checks the flags, without reading the files they name.
func (f *apiFlags) check() error {
	u, err := apiclient.ParseBase(f.api)
	switch {
	case err != nil:
		return fmt.Errorf("--api: %w", err)
	case !f.tls.IsZero() && u.Scheme != "https":
		return fmt.Errorf("--tls-* flags given, but --api %s is not https", f.api)
	case (f.tls.CertFile == "") != (f.tls.KeyFile == ""):
		return errors.New("--tls-cert and --tls-key go together")
	}
	return nil
}

// client checks the flags, loads the TLS files, and returns a client of
// the control API; it dials nothing.
func (f *apiFlags) client(timeout time.Duration) (*apiclient.Client, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	key := f.key
	if key == "" {
		key = os.Getenv("FENCEGW_API_KEY")
	}
	c, err := apiclient.New(f.api, key, f.tls, timeout)
	if err != nil {
		return nil, fmt.Errorf("--tls-*: %w", err) // the URL passed check
	}
	return c, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
