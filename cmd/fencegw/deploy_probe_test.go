package main

// Health checks that run `fencegw probe` inside a container (a compose
// healthcheck, the image's HEALTHCHECK, a Kubernetes exec probe), checked
// against the binary and run against a gateway.

import (
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/fencegw/fencegw/config"
)

// checkProbeCommand checks the arguments of a health check that runs
// `fencegw probe` in the container of a gateway configured by c (args[0]
// is "probe"): the binary's own flag parsing accepts them; the probe
// reaches the control API where c serves it, on loopback, in its scheme
// and with a client certificate when api_tls requires one; it asks path;
// and its --timeout is below limit (the runtime's timeout, when not zero),
// so that a slow gateway fails with the probe's reason.
func checkProbeCommand(t *testing.T, where string, args []string, c config.Config, path string, limit time.Duration) {
	t.Helper()
	if len(args) == 0 || args[0] != "probe" {
		t.Errorf("%s: command %q, want probe …", where, args)
		return
	}
	f, err := parseProbe(args[1:], io.Discard)
	if err != nil {
		t.Errorf("%s: fencegw refuses %q: %v", where, args, err)
		return
	}
	u, _ := url.Parse(f.api.api)
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		t.Errorf("%s: --api %s: a check run in the container reaches the control API on loopback", where, f.api.api)
	}
	host, port := addrPort(t, "api_listen", c.APIListen)
	if ip := net.ParseIP(host); host != "" && (ip == nil || !(ip.IsUnspecified() || ip.IsLoopback())) {
		t.Errorf("%s: api_listen %s is not reachable on loopback", where, c.APIListen)
	}
	if u.Port() != strconv.Itoa(port) {
		t.Errorf("%s: --api %s, but api_listen is %s", where, f.api.api, c.APIListen)
	}
	scheme := "http"
	if c.APITLS != nil {
		scheme = "https"
		if c.APITLS.ClientCAFile != "" && f.api.tls.CertFile == "" {
			t.Errorf("%s: the control API requires client certificates (api_tls.client_ca_file): give --tls-cert and --tls-key", where)
		}
	}
	if u.Scheme != scheme {
		t.Errorf("%s: --api %s, but the control API speaks %s", where, f.api.api, scheme)
	}
	if f.path != path {
		t.Errorf("%s: --path %s, want %s", where, f.path, path)
	}
	if limit > 0 && f.timeout >= limit {
		t.Errorf("%s: --timeout %s, want less than the runtime's timeout %s", where, f.timeout, limit)
	}
}

// runProbeCommand runs a deployment's `fencegw probe …` (args[0] is
// "probe") with the environment env, against the control API at api
// instead of the one it names; it must pass.
func runProbeCommand(t *testing.T, where string, args []string, env map[string]string, api string) {
	t.Helper()
	if v, ok := flagValue(args, "api"); ok {
		args = replaceArg(args, v, api)
	} else {
		args = append(append([]string(nil), args...), "--api", api)
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), envList(env)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: fencegw %q failed against the gateway: %v\n%s", where, args, err, out)
	}
}

// mustDuration reads a runtime's duration ("5s"), as Go writes them.
func mustDuration(t *testing.T, where, v string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s: duration %q: %v", where, v, err)
	}
	return d
}
