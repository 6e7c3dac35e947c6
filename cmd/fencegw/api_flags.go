package main

import (
	"flag"
	"os"
	"time"

	"github.com/fencegw/fencegw/internal/apiclient"
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
func addAPIFlags(fs *flag.FlagSet, withKey bool) *apiFlags {
	f := &apiFlags{}
	fs.StringVar(&f.api, "api", envOr("FENCEGW_API", defaultAPI), "control API base `URL` (default $FENCEGW_API or "+defaultAPI+")")
	if withKey {
		fs.StringVar(&f.key, "api-key", os.Getenv("FENCEGW_API_KEY"), "API `key` (default $FENCEGW_API_KEY)")
	}
	fs.StringVar(&f.tls.CAFile, "tls-ca", "", "PEM `file` of the CAs to trust for an https --api (default: the system's)")
	fs.StringVar(&f.tls.CertFile, "tls-cert", "", "PEM client certificate `file`, when api_tls.client_ca_file requires one")
	fs.StringVar(&f.tls.KeyFile, "tls-key", "", "PEM `file` of the client certificate's key")
	fs.StringVar(&f.tls.ServerName, "tls-server-name", "", "`name` to check the control API's certificate against, if not --api's host")
	return f
}

// client checks the flags and returns a client of the control API; it
// dials nothing.
func (f *apiFlags) client(timeout time.Duration) (*apiclient.Client, error) {
	return apiclient.New(f.api, f.key, f.tls, timeout)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
