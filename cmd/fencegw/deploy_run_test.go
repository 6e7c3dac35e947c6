package main

// The deployments' configurations, run by the real binary: only the store
// (a test database or file), the listen addresses (free loopback ports) and
// the OTLP endpoint (a receiver in the test) stand in for the services a
// container would reach.

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/internal/testutil/testpg"
)

// httpStatus sends GET url with an optional API key.
func httpStatus(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// expectStatus checks the answers a deployment relies on.
func expectStatus(t *testing.T, where, url, key string, want int) string {
	t.Helper()
	got, body := httpStatus(t, url, key)
	if got != want {
		t.Errorf("%s: GET %s = %d, want %d\n%s", where, url, got, want, body)
	}
	return body
}

// envList turns an environment map into NAME=value entries.
func envList(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// replaceArg returns args with every value from replaced by to.
func replaceArg(args []string, from, to string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == from {
			a = to
		} else if name, val, ok := strings.Cut(a, "="); ok && val == from {
			a = name + "=" + to
		}
		out[i] = a
	}
	return out
}

// waitForService waits until the receiver got a span of service.
func waitForService(t *testing.T, r *otlpReceiver, service string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, s := range r.spans {
			if s.service == service {
				r.mu.Unlock()
				return
			}
		}
		r.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("no span of service %q reached the OTLP endpoint", service)
}

// TestDeployKubernetesConfigServes runs the ConfigMap's configuration with
// the Deployment's arguments and environment: the signing key is read from
// where the Secret is mounted, the probes' endpoints answer without a key,
// the fence endpoints want the admin key, and traces leave over OTLP/HTTP.
func TestDeployKubernetesConfigServes(t *testing.T) {
	dsn := testpg.Shared(t).NewDatabase(t)
	m := loadKubernetes(t)
	g := loadK8sGateway(t, m, loadDockerImage(t))
	c := g.serveConfig(t)

	// The Secret's mount directory becomes a temporary one holding a real key.
	secrets := t.TempDir()
	keyDir := path.Dir(c.Signing.KeyFile)
	keyFile := filepath.Join(secrets, path.Base(c.Signing.KeyFile))
	out, err := exec.Command(binary, "keys", "generate", "--out", keyFile).CombinedOutput()
	if err != nil {
		t.Fatalf("keys generate: %v\n%s", err, out)
	}
	kid := regexp.MustCompile(`generated \S+ key (\S+)`).FindStringSubmatch(string(out))
	if kid == nil {
		t.Fatalf("keys generate said %q", out)
	}
	cfg := filepath.Join(t.TempDir(), path.Base(g.cfgPath))
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(g.cfgText, keyDir+"/", secrets+"/")), 0o600); err != nil {
		t.Fatal(err)
	}

	recv := newOTLPReceiver(t)
	env := map[string]string{}
	for k, v := range g.env {
		env[k] = v
	}
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = recv.URL
	env["OTEL_BSP_SCHEDULE_DELAY"] = "100"
	args := append(replaceArg(g.args[1:], g.cfgPath, cfg), "--store", dsn)
	p := startEnv(t, envList(env), args...)

	where := "Kubernetes"
	for _, probe := range []*k8sProbe{g.c.StartupProbe, g.c.LivenessProbe, g.c.ReadinessProbe} {
		switch {
		case probe == nil:
		case probe.HTTPGet != nil:
			expectStatus(t, where+" probe", p.api+probe.HTTPGet.Path, "", http.StatusOK)
		case probe.Exec != nil && len(probe.Exec.Command) > 1:
			runProbeCommand(t, where+" exec probe", probe.Exec.Command[1:], g.env, p.api)
		}
	}
	expectStatus(t, where, p.api+"/metrics", "", http.StatusOK)
	if jwks := expectStatus(t, where, p.api+"/.well-known/jwks.json", "", http.StatusOK); !strings.Contains(jwks, kid[1]) {
		t.Errorf("the JWKS does not hold the mounted signing key %s:\n%s", kid[1], jwks)
	}
	expectStatus(t, where+" without a key", p.api+"/v1/fences/invoice-sweeper", "", http.StatusUnauthorized)
	expectStatus(t, where+" with the admin key", p.api+"/v1/fences/invoice-sweeper", g.keys.adminKey(t, c), http.StatusOK)
	waitForService(t, recv, env["OTEL_SERVICE_NAME"])
}

// TestDeployComposeConfigServes runs a compose replica's configuration with
// its command and environment (its etcd epoch source on a test etcd), then
// its health check command against it;
// the admin key the compose file documents works, and traces leave over
// OTLP/HTTP.
func TestDeployComposeConfigServes(t *testing.T) {
	dsn := testpg.Shared(t).NewDatabase(t)
	f := loadCompose(t)
	img := loadDockerImage(t)
	gateways, _ := composeParts(t, f, img)
	g := gateways[0]
	g.load(t)
	cfgPath, _ := flagValue(g.args, "config")
	// The etcd service of the epoch sources becomes a test etcd.
	text := g.text
	var etcd *testetcd.Cluster
	for _, r := range g.config.Routes {
		if r.EpochSource == nil || r.EpochSource.Kind != "etcd" {
			continue
		}
		if etcd == nil {
			etcd = testetcd.Start(t, 1)
		}
		for _, e := range r.EpochSource.Endpoints {
			text = strings.ReplaceAll(text, e, etcd.Endpoints()[0])
		}
	}
	cfg := writeConfig(t, g.files[cfgPath], text, g.svc.Environment)

	recv := newOTLPReceiver(t)
	env := map[string]string{}
	for k, v := range g.svc.Environment {
		env[k] = v
	}
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = recv.URL
	env["OTEL_BSP_SCHEDULE_DELAY"] = "100"
	p := startEnv(t, envList(env), append(replaceArg(g.args[1:], cfgPath, cfg), "--store", dsn)...)

	where := "compose " + g.name
	expectStatus(t, where, p.api+"/healthz", "", http.StatusOK)
	expectStatus(t, where, p.api+"/readyz", "", http.StatusOK)
	expectStatus(t, where, p.api+"/metrics", "", http.StatusOK)

	// The health check, as the container runs it, pointed at this
	// gateway's control API.
	if hc := g.svc.Healthcheck; hc != nil && len(hc.Test) > 2 && hc.Test[1] == img.Binary {
		runProbeCommand(t, where+" health check", hc.Test[2:], g.svc.Environment, p.api)
	} else {
		t.Errorf("%s: no health check running the image's binary", where)
	}

	// The admin key that compose.yaml's instructions use.
	m := regexp.MustCompile(`FENCEGW_API_KEY=(fgw_\S+)`).FindStringSubmatch(readDeployFile(t, "compose.yaml"))
	if m == nil {
		t.Fatal("compose.yaml documents no API key to try")
	}
	if name, admin := apiKeyFor(g.config, m[1], "invoice-sweeper"); !admin {
		t.Errorf("the documented key %s is not an admin key of the configuration (entry %q)", m[1], name)
	}
	expectStatus(t, where+" without a key", p.api+"/v1/fences/invoice-sweeper", "", http.StatusUnauthorized)
	expectStatus(t, where+" with the documented key", p.api+"/v1/fences/invoice-sweeper", m[1], http.StatusOK)
	waitForService(t, recv, env["OTEL_SERVICE_NAME"])
}

// TestDeployComposeEchoServes runs the compose upstream's command: the
// sample upstream the gateways' routes point at.
func TestDeployComposeEchoServes(t *testing.T) {
	f := loadCompose(t)
	img := loadDockerImage(t)
	_, other := composeParts(t, f, img)
	for name, s := range other {
		if s.Build == nil || len(s.Command) == 0 || s.Command[0] != "echo" {
			continue
		}
		listen, ok := flagValue(s.Command, "listen")
		if !ok {
			t.Fatalf("service %s: echo without --listen", name)
		}
		addr := freeAddr(t)
		args := img.args(t, "compose service "+name, s.Entrypoint, replaceArg(s.Command, listen, addr))
		cmd := exec.Command(binary, args...)
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		line, _ := bufio.NewReader(stderr).ReadString('\n')
		if !strings.Contains(line, "listening") {
			t.Fatalf("service %s: fencegw %q said %q", name, args, line)
		}
		go io.Copy(io.Discard, stderr)
		expectStatus(t, "compose "+name, "http://"+addr+"/anything", "", http.StatusOK)
	}
}

// TestDeployDockerDefaultServes runs the image's ENTRYPOINT and CMD on the
// baked configuration, and its HEALTHCHECK against it.
func TestDeployDockerDefaultServes(t *testing.T) {
	img := loadDockerImage(t)
	args := img.args(t, "Dockerfile", nil, nil)
	cfgPath, _ := flagValue(args, "config")
	store := filepath.Join(t.TempDir(), "fencegw.db")
	p := start(t, append(replaceArg(args[1:], cfgPath, img.Files[cfgPath]), "--store", store)...)
	expectStatus(t, "Dockerfile", p.api+"/healthz", "", http.StatusOK)
	expectStatus(t, "Dockerfile", p.api+"/readyz", "", http.StatusOK)
	if len(img.Healthcheck) > 1 {
		runProbeCommand(t, "Dockerfile HEALTHCHECK", img.Healthcheck[1:], nil, p.api)
	}
}
