package main

import (
	"context"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/telemetry"
)

type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
}

// composeService holds the keys the tests read, in the long forms the
// deployment uses (a short form fails to decode, and the test with it).
type composeService struct {
	Image string `yaml:"image"`
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Entrypoint      []string                              `yaml:"entrypoint"`
	Command         []string                              `yaml:"command"`
	Environment     map[string]string                     `yaml:"environment"`
	Ports           []string                              `yaml:"ports"`
	Volumes         []string                              `yaml:"volumes"`
	DependsOn       map[string]struct{ Condition string } `yaml:"depends_on"`
	StopGracePeriod string                                `yaml:"stop_grace_period"`
	Healthcheck     *struct {
		Test    []string `yaml:"test"`
		Timeout string   `yaml:"timeout"`
		Disable bool     `yaml:"disable"`
	} `yaml:"healthcheck"`
}

// composeInterpolateRE matches what Compose interpolates from the host's
// environment: ${NAME}, ${NAME:-default}, ${NAME-default}.
var composeInterpolateRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}`)

// loadCompose reads deploy/compose.yaml as `docker compose` would with an
// empty host environment: ${NAME:-default} becomes default, $$ a literal $.
func loadCompose(t *testing.T) composeFile {
	t.Helper()
	text := readDeployFile(t, "compose.yaml")
	text = composeInterpolateRE.ReplaceAllString(text, "$2")
	text = strings.ReplaceAll(text, "$$", "$")
	docs := yamlDocuments(t, "deploy/compose.yaml", text)
	if len(docs) != 1 {
		t.Fatalf("deploy/compose.yaml: %d documents", len(docs))
	}
	var f composeFile
	decodeYAML(t, "deploy/compose.yaml", docs[0], &f)
	return f
}

// composeGateway is one fencegw serve service, with what it runs.
type composeGateway struct {
	name   string
	svc    composeService
	args   []string
	files  map[string]string // container path → file in deploy/
	config config.Config
	text   string // its configuration file, unexpanded
}

// composeParts sorts the services into gateways (fencegw serve in the
// image built from deploy/Dockerfile) and the rest.
func composeParts(t *testing.T, f composeFile, img dockerImage) (gateways []composeGateway, other map[string]composeService) {
	t.Helper()
	other = map[string]composeService{}
	for name, s := range f.Services {
		if s.Build == nil || path.Clean(path.Join("deploy", s.Build.Context, s.Build.Dockerfile)) != "deploy/Dockerfile" {
			other[name] = s
			continue
		}
		args := img.args(t, "compose service "+name, s.Entrypoint, s.Command)
		if len(args) == 0 || args[0] != "serve" {
			other[name] = s
			continue
		}
		g := composeGateway{name: name, svc: s, args: args, files: map[string]string{}}
		for _, v := range s.Volumes {
			parts := strings.Split(v, ":")
			if len(parts) >= 2 && (strings.HasPrefix(parts[0], "./") || strings.HasPrefix(parts[0], "../")) {
				g.files[parts[1]] = filepath.Join(deployDir, filepath.FromSlash(parts[0]))
			}
		}
		cfg, ok := flagValue(args, "config")
		if !ok || g.files[cfg] == "" {
			t.Fatalf("compose service %s: --config %q is not a file mounted from deploy/", name, cfg)
		}
		rel, _ := filepath.Rel(deployDir, g.files[cfg])
		g.text = readDeployFile(t, filepath.ToSlash(rel))
		gateways = append(gateways, g)
	}
	return gateways, other
}

// load loads each gateway's configuration through the binary's
// flags, with the service's environment set.
func (g *composeGateway) load(t *testing.T) {
	t.Helper()
	cfg, _ := flagValue(g.args, "config")
	files := map[string]string{cfg: writeConfig(t, g.files[cfg], g.text, g.svc.Environment)}
	g.config = checkServeArgs(t, "compose service "+g.name, g.args, files)
}

// containerPort returns the container side of a ports: entry
// ("[ip:]host:container[/proto]").
func containerPort(t *testing.T, entry string) int {
	t.Helper()
	parts := strings.Split(strings.TrimSuffix(entry, "/tcp"), ":")
	n, err := strconv.Atoi(parts[len(parts)-1])
	if err != nil {
		t.Fatalf("ports entry %q", entry)
	}
	return n
}

func composeImagePrefix(t *testing.T, other map[string]composeService, prefix string) string {
	t.Helper()
	for name, s := range other {
		if strings.HasPrefix(s.Image, prefix) {
			return name
		}
	}
	t.Fatalf("deploy/compose.yaml has no service with an image %s…", prefix)
	return ""
}

// TestComposeServices: two or more gateway replicas from the same image,
// PostgreSQL 16, etcd 3.6 and an OpenTelemetry collector; health checks.
func TestComposeServices(t *testing.T) {
	f := loadCompose(t)
	img := loadDockerImage(t)
	gateways, other := composeParts(t, f, img)
	if len(gateways) < 2 {
		t.Fatalf("%d gateway services, want at least 2", len(gateways))
	}
	for _, g := range gateways[1:] {
		if g.svc.Image != gateways[0].svc.Image || g.svc.Build.Dockerfile != gateways[0].svc.Build.Dockerfile {
			t.Errorf("gateways %s and %s run different images", gateways[0].name, g.name)
		}
	}
	pg := composeImagePrefix(t, other, "postgres:16")
	etcd := composeImagePrefix(t, other, "quay.io/coreos/etcd:v3.6")
	composeImagePrefix(t, other, "otel/opentelemetry-collector-contrib")
	for _, name := range []string{pg, etcd} {
		if hc := other[name].Healthcheck; hc == nil || len(hc.Test) < 2 || hc.Test[0] != "CMD" {
			t.Errorf("service %s: want a health check in exec form [CMD, …]", name)
		}
	}
	for _, g := range gateways {
		if hc := g.svc.Healthcheck; hc == nil || len(hc.Test) < 2 || hc.Test[0] != "CMD" {
			t.Errorf("gateway %s: want a health check in exec form [CMD, …] (the image has no shell)", g.name)
		}
		for _, dep := range []string{pg, etcd} {
			if g.svc.DependsOn[dep].Condition != "service_healthy" {
				t.Errorf("gateway %s: depends_on %s: want condition service_healthy", g.name, dep)
			}
		}
	}
}

// TestComposeGatewaysMatchBinary: each replica's command and configuration
// are accepted by the binary; ports, store, upstreams, epoch source,
// telemetry and stop grace period agree with the other services.
func TestComposeGatewaysMatchBinary(t *testing.T) {
	f := loadCompose(t)
	img := loadDockerImage(t)
	gateways, other := composeParts(t, f, img)
	pgName := composeImagePrefix(t, other, "postgres:16")
	pgEnv := other[pgName].Environment
	collector := composeImagePrefix(t, other, "otel/opentelemetry-collector-contrib")
	otlpHTTPPort := collectorOTLPHTTPPort(t)
	hostPorts := map[string]string{}
	var store string
	for i := range gateways {
		g := &gateways[i]
		g.load(t)
		c := g.config
		where := "compose service " + g.name

		// Ports: both listeners on every interface, published, in EXPOSE.
		proxy := requireAllInterfaces(t, where, "listen", c.Listen)
		control := requireAllInterfaces(t, where, "api_listen", c.APIListen)
		published := map[int]bool{}
		for _, p := range g.svc.Ports {
			cp := containerPort(t, p)
			if cp != proxy && cp != control {
				t.Errorf("%s: publishes container port %d, which fencegw does not listen on (%d, %d)", where, cp, proxy, control)
			}
			published[cp] = true
			host := strings.TrimSuffix(p, ":"+strconv.Itoa(cp))
			if prev, dup := hostPorts[host]; dup {
				t.Errorf("%s and %s both publish %s", prev, g.name, host)
			}
			hostPorts[host] = g.name
		}
		if !published[proxy] || !published[control] {
			t.Errorf("%s: ports %v, want both %d (listen) and %d (api_listen) published", where, g.svc.Ports, proxy, control)
		}
		if !img.Expose[proxy] || !img.Expose[control] {
			t.Errorf("%s: ports %d and %d are not both EXPOSEd by the image (%v)", where, proxy, control, img.Expose)
		}

		// One PostgreSQL, reached as the compose service, with its credentials.
		if config.KindOf(c.Store) != config.StorePostgres {
			t.Fatalf("%s: store %s, want the shared PostgreSQL", where, c.Store)
		}
		u, err := url.Parse(c.Store)
		if err != nil {
			t.Fatal(err)
		}
		pw, _ := u.User.Password()
		if u.Hostname() != pgName || (u.Port() != "" && u.Port() != "5432") || u.User.Username() != pgEnv["POSTGRES_USER"] ||
			pw != pgEnv["POSTGRES_PASSWORD"] || strings.TrimPrefix(u.Path, "/") != pgEnv["POSTGRES_DB"] {
			t.Errorf("%s: store %s does not match service %s (user %s, db %s, its password)", where, u.Redacted(), pgName,
				pgEnv["POSTGRES_USER"], pgEnv["POSTGRES_DB"])
		}
		if store == "" {
			store = c.Store
		} else if c.Store != store {
			t.Errorf("%s: the replicas must share one store", where)
		}

		// Upstreams and epoch sources are compose services.
		for j, r := range c.Routes {
			up, _ := url.Parse(r.Upstream)
			s, ok := other[up.Hostname()]
			if !ok {
				t.Errorf("%s: routes[%d].upstream %s: no such compose service", where, j, r.Upstream)
				continue
			}
			if l, ok := flagValue(s.Command, "listen"); !ok || !strings.HasSuffix(l, ":"+up.Port()) {
				t.Errorf("%s: routes[%d].upstream %s: service %s listens on %q", where, j, r.Upstream, up.Hostname(), l)
			}
			if r.EpochSource != nil && r.EpochSource.Kind == "etcd" {
				for _, e := range r.EpochSource.Endpoints {
					host, port, _ := net.SplitHostPort(e)
					es, ok := other[host]
					if !ok || !strings.HasPrefix(es.Image, "quay.io/coreos/etcd") {
						t.Errorf("%s: routes[%d].epoch_source endpoint %s is not the etcd service", where, j, e)
						continue
					}
					if l, _ := flagValue(es.Command, "listen-client-urls"); !strings.HasSuffix(l, ":"+port) {
						t.Errorf("%s: etcd endpoint %s, but etcd's listen-client-urls is %q", where, e, l)
					}
				}
			}
		}

		// Traces go to the collector over OTLP/HTTP; the binary's telemetry
		// set-up accepts the service's OTEL_* variables.
		env := g.svc.Environment
		if env["OTEL_EXPORTER_OTLP_PROTOCOL"] != "http/protobuf" {
			t.Errorf("%s: OTEL_EXPORTER_OTLP_PROTOCOL %q, want http/protobuf", where, env["OTEL_EXPORTER_OTLP_PROTOCOL"])
		}
		ep, err := url.Parse(env["OTEL_EXPORTER_OTLP_ENDPOINT"])
		if err != nil || ep.Hostname() != collector || ep.Port() != strconv.Itoa(otlpHTTPPort) {
			t.Errorf("%s: OTEL_EXPORTER_OTLP_ENDPOINT %q, want http://%s:%d (the collector's OTLP/HTTP receiver)",
				where, env["OTEL_EXPORTER_OTLP_ENDPOINT"], collector, otlpHTTPPort)
		}
		if g.svc.DependsOn[collector].Condition == "" {
			t.Errorf("%s: does not depend on %s", where, collector)
		}
		checkTelemetryEnv(t, where, env)

		// docker stop waits long enough for the drain.
		grace, err := time.ParseDuration(g.svc.StopGracePeriod)
		if err != nil || grace <= c.ShutdownTimeout.D() {
			t.Errorf("%s: stop_grace_period %q, want more than shutdown_timeout %s", where, g.svc.StopGracePeriod, c.ShutdownTimeout.D())
		}
	}
}

// checkTelemetryEnv runs the binary's telemetry set-up with a deployment's
// OTEL_* variables as the process's only OTEL_* environment (until the test
// ends): it must accept every value and export traces.
func checkTelemetryEnv(t *testing.T, where string, env map[string]string) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OTEL_") {
			t.Setenv(k, "") // restored when the test ends
			os.Unsetenv(k)
		}
	}
	for k, v := range env {
		if strings.HasPrefix(k, "OTEL_") {
			t.Setenv(k, v)
		}
	}
	tel, err := telemetry.Setup(context.Background(), telemetry.Options{ServiceVersion: "deploy-test"})
	if err != nil {
		t.Errorf("%s: the OTEL_* environment is refused: %v", where, err)
		return
	}
	if !tel.Exporting {
		t.Errorf("%s: with this OTEL_* environment no trace is exported", where)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tel.Shutdown(ctx)
}

// TestComposeHealthchecksMatchBinary: each gateway's health check runs
// `fencegw probe` in exec form against the replica's own /readyz, with
// flags the binary accepts and a --timeout below the check's; the other
// services of the image disable its HEALTHCHECK, which probes a gateway.
func TestComposeHealthchecksMatchBinary(t *testing.T) {
	f := loadCompose(t)
	img := loadDockerImage(t)
	gateways, other := composeParts(t, f, img)
	for i := range gateways {
		g := &gateways[i]
		g.load(t)
		hc := g.svc.Healthcheck
		if hc == nil || len(hc.Test) < 2 {
			continue // TestComposeServices reports it
		}
		where := "compose service " + g.name + " healthcheck"
		if hc.Test[0] != "CMD" || hc.Test[1] != img.Binary {
			t.Errorf("%s: %q, want [CMD, %s, probe, …]", where, hc.Test, img.Binary)
			continue
		}
		limit := 30 * time.Second // compose's default
		if hc.Timeout != "" {
			limit = mustDuration(t, where, hc.Timeout)
		}
		checkProbeCommand(t, where, hc.Test[2:], g.config, "/readyz", limit)
	}
	for name, s := range other {
		built := s.Build != nil && path.Clean(path.Join("deploy", s.Build.Context, s.Build.Dockerfile)) == "deploy/Dockerfile"
		if (built || (len(gateways) > 0 && s.Image == gateways[0].svc.Image)) && img.Healthcheck != nil &&
			(s.Healthcheck == nil || (!s.Healthcheck.Disable && len(s.Healthcheck.Test) == 0)) {
			t.Errorf("compose service %s runs %q in the image, and inherits its HEALTHCHECK, which probes a gateway: disable it",
				name, s.Command)
		}
	}
}

// collectorConfig is the part of an OpenTelemetry Collector configuration
// the tests read.
type collectorConfig struct {
	Receivers  map[string]map[string]any `yaml:"receivers"`
	Processors map[string]any            `yaml:"processors"`
	Exporters  map[string]any            `yaml:"exporters"`
	Extensions map[string]any            `yaml:"extensions"`
	Service    struct {
		Extensions []string `yaml:"extensions"`
		Pipelines  map[string]struct {
			Receivers  []string `yaml:"receivers"`
			Processors []string `yaml:"processors"`
			Exporters  []string `yaml:"exporters"`
		} `yaml:"pipelines"`
	} `yaml:"service"`
}

func loadCollectorConfig(t *testing.T) collectorConfig {
	t.Helper()
	docs := yamlDocuments(t, "deploy/otel-collector.yaml", readDeployFile(t, "otel-collector.yaml"))
	if len(docs) != 1 {
		t.Fatalf("deploy/otel-collector.yaml: %d documents", len(docs))
	}
	var c collectorConfig
	decodeYAML(t, "deploy/otel-collector.yaml", docs[0], &c)
	return c
}

// collectorOTLPHTTPPort returns the port of the collector's OTLP/HTTP
// receiver, which must listen on every interface of its container.
func collectorOTLPHTTPPort(t *testing.T) int {
	t.Helper()
	c := loadCollectorConfig(t)
	protocols, _ := c.Receivers["otlp"]["protocols"].(map[string]any)
	httpProto, ok := protocols["http"].(map[string]any)
	if !ok {
		t.Fatal("deploy/otel-collector.yaml: no otlp receiver with the http protocol")
	}
	ep, _ := httpProto["endpoint"].(string)
	return requireAllInterfaces(t, "deploy/otel-collector.yaml", "receivers.otlp.protocols.http.endpoint", ep)
}

// TestComposeCollectorConfig: the collector receives OTLP over HTTP into a
// traces pipeline, every pipeline names defined components, scrapes reach
// the gateways' /metrics, and compose mounts the file where the collector
// reads it.
func TestComposeCollectorConfig(t *testing.T) {
	c := loadCollectorConfig(t)
	collectorOTLPHTTPPort(t)
	traces, ok := c.Service.Pipelines["traces"]
	if !ok || !contains(traces.Receivers, "otlp") || len(traces.Exporters) == 0 {
		t.Errorf("no traces pipeline from the otlp receiver to an exporter: %+v", traces)
	}
	defined := func(kind string, m map[string]any, names []string) {
		for _, n := range names {
			if _, ok := m[n]; !ok {
				t.Errorf("the pipelines use %s %q, which is not defined", kind, n)
			}
		}
	}
	receivers := map[string]any{}
	for k := range c.Receivers {
		receivers[k] = true
	}
	for _, p := range c.Service.Pipelines {
		defined("receiver", receivers, p.Receivers)
		defined("processor", c.Processors, p.Processors)
		defined("exporter", c.Exporters, p.Exporters)
	}
	defined("extension", c.Extensions, c.Service.Extensions)
	if _, ok := c.Exporters["debug"]; !ok {
		t.Error("no debug exporter")
	}

	f := loadCompose(t)
	img := loadDockerImage(t)
	gateways, other := composeParts(t, f, img)
	control := map[string]int{}
	for i := range gateways {
		gateways[i].load(t)
		_, control[gateways[i].name] = addrPort(t, "api_listen", gateways[i].config.APIListen)
	}
	if prom, ok := c.Receivers["prometheus"]; ok {
		cfg, _ := prom["config"].(map[string]any)
		scrapes, _ := cfg["scrape_configs"].([]any)
		for _, s := range scrapes {
			sc, _ := s.(map[string]any)
			if p, ok := sc["metrics_path"].(string); ok && p != "/metrics" {
				t.Errorf("scrape %v: metrics_path %q, fencegw serves /metrics", sc["job_name"], p)
			}
			statics, _ := sc["static_configs"].([]any)
			for _, st := range statics {
				targets, _ := st.(map[string]any)["targets"].([]any)
				for _, tg := range targets {
					host, port, _ := net.SplitHostPort(tg.(string))
					if want, ok := control[host]; !ok || strconv.Itoa(want) != port {
						t.Errorf("scrape target %v is not a gateway's control port (%v)", tg, control)
					}
				}
			}
		}
	}

	name := composeImagePrefix(t, other, "otel/opentelemetry-collector-contrib")
	s := other[name]
	cfgPath := "/etc/otelcol-contrib/config.yaml" // the image's default
	if p, ok := flagValue(s.Command, "config"); ok {
		cfgPath = p
	}
	mounted := false
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && path.Clean(parts[0]) == "otel-collector.yaml" && parts[1] == cfgPath {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("service %s does not mount ./otel-collector.yaml at %s (volumes %v)", name, cfgPath, s.Volumes)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
