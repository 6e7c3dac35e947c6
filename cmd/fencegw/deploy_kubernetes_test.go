package main

import (
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fencegw/fencegw/config"
)

// k8sObject is a Kubernetes manifest document: its kind, name and labels,
// and the node to decode the rest from.
type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	file string
	node *yaml.Node
}

type k8sLabelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type k8sDeployment struct {
	Spec struct {
		Replicas int              `yaml:"replicas"`
		Selector k8sLabelSelector `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec k8sPodSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type k8sPodSpec struct {
	TerminationGracePeriodSeconds *int `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               struct {
		RunAsNonRoot *bool `yaml:"runAsNonRoot"`
		RunAsUser    *int  `yaml:"runAsUser"`
	} `yaml:"securityContext"`
	Containers []k8sContainer `yaml:"containers"`
	Volumes    []struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name  string         `yaml:"name"`
			Items []k8sKeyToPath `yaml:"items"`
		} `yaml:"configMap"`
		Secret *struct {
			SecretName string         `yaml:"secretName"`
			Items      []k8sKeyToPath `yaml:"items"`
		} `yaml:"secret"`
	} `yaml:"volumes"`
}

type k8sKeyToPath struct {
	Key  string `yaml:"key"`
	Path string `yaml:"path"`
}

type k8sContainer struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Ports   []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
			FieldRef *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	StartupProbe   *k8sProbe `yaml:"startupProbe"`
	LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	Lifecycle      struct {
		PreStop *struct {
			Sleep *struct {
				Seconds int `yaml:"seconds"`
			} `yaml:"sleep"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		SubPath   string `yaml:"subPath"`
	} `yaml:"volumeMounts"`
}

type k8sProbe struct {
	HTTPGet *struct {
		Path   string    `yaml:"path"`
		Port   yaml.Node `yaml:"port"` // a number or a port name
		Scheme string    `yaml:"scheme"`
	} `yaml:"httpGet"`
	Exec *struct {
		Command []string `yaml:"command"`
	} `yaml:"exec"`
	TimeoutSeconds int `yaml:"timeoutSeconds"`
}

// timeout is the probe's timeoutSeconds (default 1).
func (p *k8sProbe) timeout() time.Duration {
	if p.TimeoutSeconds <= 0 {
		return time.Second
	}
	return time.Duration(p.TimeoutSeconds) * time.Second
}

type k8sService struct {
	Spec struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string    `yaml:"name"`
			Port       int       `yaml:"port"`
			TargetPort yaml.Node `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type k8sPDB struct {
	Spec struct {
		MinAvailable   yaml.Node        `yaml:"minAvailable"`
		MaxUnavailable yaml.Node        `yaml:"maxUnavailable"`
		Selector       k8sLabelSelector `yaml:"selector"`
	} `yaml:"spec"`
}

type k8sData struct {
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
}

// k8sManifests is every object in deploy/kubernetes/, by kind.
type k8sManifests struct {
	byKind map[string][]k8sObject
	files  []string
}

func loadKubernetes(t *testing.T) k8sManifests {
	t.Helper()
	dir := deployFile("kubernetes")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := k8sManifests{byKind: map[string][]k8sObject{}}
	for _, e := range entries {
		if e.IsDir() || !(strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
			continue
		}
		m.files = append(m.files, e.Name())
		rel := "kubernetes/" + e.Name()
		for i, n := range yamlDocuments(t, "deploy/"+rel, readDeployFile(t, rel)) {
			var o k8sObject
			decodeYAML(t, "deploy/"+rel, n, &o)
			if o.APIVersion == "" || o.Kind == "" {
				t.Fatalf("deploy/%s document %d: no apiVersion or kind", rel, i+1)
			}
			if o.Metadata.Name == "" && o.Kind != "Kustomization" {
				t.Fatalf("deploy/%s: %s without metadata.name", rel, o.Kind)
			}
			o.file, o.node = rel, n
			m.byKind[o.Kind] = append(m.byKind[o.Kind], o)
		}
	}
	return m
}

// one returns the only object of a kind, decoded into v.
func (m k8sManifests) one(t *testing.T, kind string, v any) k8sObject {
	t.Helper()
	objs := m.byKind[kind]
	if len(objs) != 1 {
		t.Fatalf("deploy/kubernetes has %d %s objects, want 1", len(objs), kind)
	}
	decodeYAML(t, "deploy/"+objs[0].file, objs[0].node, v)
	return objs[0]
}

// named returns the object of a kind and name, decoded into v.
func (m k8sManifests) named(t *testing.T, kind, name string, v any) {
	t.Helper()
	for _, o := range m.byKind[kind] {
		if o.Metadata.Name == name {
			decodeYAML(t, "deploy/"+o.file, o.node, v)
			return
		}
	}
	t.Fatalf("deploy/kubernetes has no %s %q", kind, name)
}

// k8sGateway is the Deployment's fencegw container and what it runs.
type k8sGateway struct {
	dep       k8sDeployment
	pod       k8sPodSpec
	c         k8sContainer
	args      []string
	cfgPath   string            // --config, in the container
	cfgText   string            // that file's text, from the ConfigMap
	mounts    map[string]string // mount path → volume name
	secret    k8sData           // the Secret the container reads
	secretRef string
	env       map[string]string // plausible values for the container's env
	keys      testAPIKeys
}

var k8sVarRE = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

func loadK8sGateway(t *testing.T, m k8sManifests, img dockerImage) *k8sGateway {
	t.Helper()
	g := &k8sGateway{mounts: map[string]string{}, env: map[string]string{}, keys: testAPIKeys{}}
	m.one(t, "Deployment", &g.dep)
	g.pod = g.dep.Spec.Template.Spec
	if len(g.pod.Containers) != 1 {
		t.Fatalf("the Deployment has %d containers, want the fencegw one", len(g.pod.Containers))
	}
	g.c = g.pod.Containers[0]
	g.args = img.args(t, "Deployment", g.c.Command, g.c.Args)
	var ok bool
	if g.cfgPath, ok = flagValue(g.args, "config"); !ok {
		t.Fatalf("the Deployment runs %q without --config", g.args)
	}
	for _, vm := range g.c.VolumeMounts {
		g.mounts[vm.MountPath] = vm.Name
	}
	g.cfgText = g.fileText(t, m, g.cfgPath, true)

	// Plausible values for the environment, from the manifests' sources.
	for _, e := range g.c.Env {
		switch {
		case e.ValueFrom == nil:
			g.env[e.Name] = k8sVarRE.ReplaceAllStringFunc(e.Value, func(ref string) string {
				return g.env[ref[2:len(ref)-1]] // Kubernetes expands $(NAME) of earlier variables
			})
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			var s k8sData
			m.named(t, "Secret", ref.Name, &s)
			if _, ok := s.value(ref.Key); !ok {
				t.Errorf("env %s: Secret %s has no key %q", e.Name, ref.Name, ref.Key)
			}
			g.env[e.Name] = plausibleSecret(g.keys, ref.Key)
		case e.ValueFrom.FieldRef != nil:
			g.env[e.Name] = map[string]string{"metadata.name": "fencegw-5d8f7c9b4-x2x7q",
				"metadata.namespace": "default"}[e.ValueFrom.FieldRef.FieldPath]
		default:
			t.Fatalf("env %s: a source the test does not know", e.Name)
		}
	}
	return g
}

func (s k8sData) value(key string) (string, bool) {
	if v, ok := s.StringData[key]; ok {
		return v, true
	}
	v, ok := s.Data[key]
	return v, ok
}

// fileText returns the text of a file the container sees at p: an item of
// the ConfigMap or Secret mounted on its directory. fromConfigMap says
// which it must be.
func (g *k8sGateway) fileText(t *testing.T, m k8sManifests, p string, fromConfigMap bool) string {
	t.Helper()
	dir, base := path.Dir(p), path.Base(p)
	vol, ok := g.mounts[dir]
	if !ok {
		t.Fatalf("%s: no volume is mounted on %s", p, dir)
	}
	for _, v := range g.pod.Volumes {
		if v.Name != vol {
			continue
		}
		var (
			name  string
			items []k8sKeyToPath
			kind  string
		)
		switch {
		case v.ConfigMap != nil && fromConfigMap:
			name, items, kind = v.ConfigMap.Name, v.ConfigMap.Items, "ConfigMap"
		case v.Secret != nil && !fromConfigMap:
			name, items, kind = v.Secret.SecretName, v.Secret.Items, "Secret"
			g.secretRef = name
		default:
			t.Fatalf("%s: volume %s is not the expected kind", p, vol)
		}
		key := base
		if len(items) > 0 {
			key = ""
			for _, it := range items {
				if it.Path == base {
					key = it.Key
				}
			}
		}
		var d k8sData
		m.named(t, kind, name, &d)
		text, ok := d.value(key)
		if !ok || key == "" {
			t.Fatalf("%s: %s %s has no item for %s", p, kind, name, base)
		}
		if kind == "Secret" {
			g.secret = d
		}
		return text
	}
	t.Fatalf("%s: volume %s is not defined", p, vol)
	return ""
}

// serveConfig loads the ConfigMap's configuration through the binary's
// flags, with the container's environment (plausible values) set.
func (g *k8sGateway) serveConfig(t *testing.T) config.Config {
	t.Helper()
	local := writeConfig(t, g.cfgPath, g.cfgText, g.env)
	return checkServeArgs(t, "Deployment", g.args, map[string]string{g.cfgPath: local})
}

// portByName resolves a probe's or Service's port (a number or a name of
// the container's ports).
func (g *k8sGateway) port(t *testing.T, where string, n yaml.Node) int {
	t.Helper()
	if p, err := strconv.Atoi(n.Value); err == nil {
		return p
	}
	for _, p := range g.c.Ports {
		if p.Name == n.Value {
			return p.ContainerPort
		}
	}
	t.Fatalf("%s: port %q is not a port of the container", where, n.Value)
	return 0
}

// TestKubernetesManifestsParse: every file parses, the kinds the issue asks
// for are there, and kustomization.yaml lists every manifest.
func TestKubernetesManifestsParse(t *testing.T) {
	m := loadKubernetes(t)
	for _, kind := range []string{"Deployment", "Service", "ConfigMap", "Secret", "PodDisruptionBudget"} {
		if len(m.byKind[kind]) == 0 {
			t.Errorf("deploy/kubernetes has no %s", kind)
		}
	}
	if k := m.byKind["Kustomization"]; len(k) == 1 {
		var kz struct {
			Resources []string `yaml:"resources"`
			Images    []struct {
				Name string `yaml:"name"`
			} `yaml:"images"`
		}
		decodeYAML(t, k[0].file, k[0].node, &kz)
		var want []string
		for _, f := range m.files {
			if f != path.Base(k[0].file) {
				want = append(want, f)
			}
		}
		got := append([]string(nil), kz.Resources...)
		sort.Strings(got)
		sort.Strings(want)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("kustomization.yaml resources %v, want every manifest %v", got, want)
		}
		var dep k8sDeployment
		m.one(t, "Deployment", &dep)
		for _, c := range dep.Spec.Template.Spec.Containers {
			found := false
			for _, im := range kz.Images {
				found = found || im.Name == c.Image
			}
			if !found {
				t.Errorf("kustomization.yaml images: nothing sets container %s's image %q", c.Name, c.Image)
			}
		}
	}
}

// TestKubernetesConfigMapLoads: the ConfigMap's fencegw.yaml loads and
// validates (unknown keys are errors) with its ${ENV} variables set, and
// every variable it expands is set by the Deployment.
func TestKubernetesConfigMapLoads(t *testing.T) {
	m := loadKubernetes(t)
	g := loadK8sGateway(t, m, loadDockerImage(t))
	for v, hasDefault := range configVars(g.cfgText) {
		if _, ok := g.env[v]; !ok && !hasDefault {
			t.Errorf("fencegw.yaml expands ${%s}, which the Deployment's container does not set", v)
		}
	}
	p := writeConfig(t, g.cfgPath, g.cfgText, g.env)
	c, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if config.KindOf(c.Store) != config.StorePostgres || strings.Contains(c.Store, "${") {
		t.Errorf("store %q: want a postgres:// URL with the password expanded", c.Store)
	}
	// Every ConfigMap file is a configuration the binary accepts.
	for _, o := range m.byKind["ConfigMap"] {
		var d k8sData
		decodeYAML(t, o.file, o.node, &d)
		for name, text := range d.Data {
			if strings.HasSuffix(name, ".yaml") {
				if _, err := config.Load(writeConfig(t, name, text, g.env)); err != nil {
					t.Errorf("ConfigMap %s, %s: %v", o.Metadata.Name, name, err)
				}
			}
		}
	}
}

// checkK8sProbes: the probes ask the unauthenticated endpoints of the
// control API (port control), over HTTP unless api_tls is set: with the
// kubelet's httpGet, or with `fencegw probe` run in the container (exec),
// the only way to present a client certificate when api_tls requires one.
func checkK8sProbes(t *testing.T, g *k8sGateway, c config.Config, img dockerImage, control int) {
	t.Helper()
	scheme := "HTTP"
	if c.APITLS != nil {
		scheme = "HTTPS"
	}
	for _, pr := range []struct {
		name  string
		p     *k8sProbe
		path  string
		must  bool
		store bool
	}{{"startupProbe", g.c.StartupProbe, "/healthz", false, false},
		{"livenessProbe", g.c.LivenessProbe, "/healthz", true, false},
		{"readinessProbe", g.c.ReadinessProbe, "/readyz", true, true}} {
		if pr.p == nil {
			if pr.must {
				t.Errorf("no %s", pr.name)
			}
			continue
		}
		// /readyz waits up to 2s for the store; kubelet's default is 1s.
		if pr.store && pr.p.TimeoutSeconds <= 2 {
			t.Errorf("%s: timeoutSeconds %d, want more than the 2s /readyz may take", pr.name, pr.p.TimeoutSeconds)
		}
		if e := pr.p.Exec; e != nil {
			if len(e.Command) < 2 || e.Command[0] != img.Binary {
				t.Errorf("%s: exec %q: want the image's binary %s running probe (the image has no shell)", pr.name, e.Command, img.Binary)
				continue
			}
			checkProbeCommand(t, pr.name, e.Command[1:], c, pr.path, pr.p.timeout())
			continue
		}
		if pr.p.HTTPGet == nil {
			t.Errorf("%s: want httpGet, or exec running %s probe (the image has no shell)", pr.name, img.Binary)
			continue
		}
		if c.APITLS != nil && c.APITLS.ClientCAFile != "" {
			t.Errorf("%s: httpGet cannot present the client certificate api_tls.client_ca_file requires: exec %s probe --tls-cert …",
				pr.name, img.Binary)
		}
		if pr.p.HTTPGet.Path != pr.path {
			t.Errorf("%s: path %q, want %s", pr.name, pr.p.HTTPGet.Path, pr.path)
		}
		if got := g.port(t, pr.name, pr.p.HTTPGet.Port); got != control {
			t.Errorf("%s: port %d, want the control API's %d", pr.name, got, control)
		}
		if s := pr.p.HTTPGet.Scheme; (s == "" && scheme != "HTTP") || (s != "" && s != scheme) {
			t.Errorf("%s: scheme %q, the control API speaks %s", pr.name, s, scheme)
		}
	}

}

// TestKubernetesExecProbes: exec probes running `fencegw probe` pass the
// checks the Deployment's probes go through, for the control API over
// HTTP and over mutual TLS (as deployment.yaml's comment suggests).
func TestKubernetesExecProbes(t *testing.T) {
	m := loadKubernetes(t)
	img := loadDockerImage(t)
	g := loadK8sGateway(t, m, img)
	c := g.serveConfig(t)
	_, control := addrPort(t, "api_listen", c.APIListen)
	execProbe := func(timeout int, args ...string) *k8sProbe {
		p := &k8sProbe{TimeoutSeconds: timeout}
		p.Exec = &struct {
			Command []string `yaml:"command"`
		}{append([]string{img.Binary, "probe"}, args...)}
		return p
	}
	api := "http://127.0.0.1:" + strconv.Itoa(control)
	g.c.StartupProbe = execProbe(2, "--api", api, "--path", "/healthz", "--timeout", "1s")
	g.c.LivenessProbe = execProbe(2, "--api", api, "--path", "/healthz", "--timeout", "1s")
	g.c.ReadinessProbe = execProbe(4, "--api", api, "--timeout", "3s")
	checkK8sProbes(t, g, c, img, control)

	c.APITLS = &config.ListenerTLS{CertFile: "gw.crt", KeyFile: "gw.key", ClientCAFile: "ca.pem"}
	mtls := []string{"--api", "https://127.0.0.1:" + strconv.Itoa(control), "--tls-ca", "ca.pem", "--tls-server-name", "fencegw",
		"--tls-cert", "probe.crt", "--tls-key", "probe.key"}
	g.c.StartupProbe = execProbe(2, append(mtls, "--path", "/healthz", "--timeout", "1s")...)
	g.c.LivenessProbe = execProbe(2, append(mtls, "--path", "/healthz", "--timeout", "1s")...)
	g.c.ReadinessProbe = execProbe(4, append(mtls, "--timeout", "3s")...)
	checkK8sProbes(t, g, c, img, control)
}

// TestKubernetesDeploymentMatchesBinary: the container's arguments and
// configuration are accepted by the binary; its ports are the listeners';
// the probes hit /healthz and /readyz on the control port; replicas,
// resources, security context, secrets, grace period and telemetry hold.
func TestKubernetesDeploymentMatchesBinary(t *testing.T) {
	m := loadKubernetes(t)
	img := loadDockerImage(t)
	g := loadK8sGateway(t, m, img)
	c := g.serveConfig(t)

	proxy := requireAllInterfaces(t, "Deployment", "listen", c.Listen)
	control := requireAllInterfaces(t, "Deployment", "api_listen", c.APIListen)
	if !c.ControlAuthenticated() {
		t.Error("the control API listens on the pod IP without api_keys")
	}
	ports := map[int]bool{}
	for _, p := range g.c.Ports {
		ports[p.ContainerPort] = true
		if p.ContainerPort != proxy && p.ContainerPort != control {
			t.Errorf("containerPort %d (%s): fencegw listens on %d and %d", p.ContainerPort, p.Name, proxy, control)
		}
		if !img.Expose[p.ContainerPort] {
			t.Errorf("containerPort %d is not EXPOSEd by the image", p.ContainerPort)
		}
	}
	if !ports[proxy] || !ports[control] {
		t.Errorf("containerPorts %v, want %d (listen) and %d (api_listen)", ports, proxy, control)
	}

	checkK8sProbes(t, g, c, img, control)

	// Scale, labels, resources, security.
	if g.dep.Spec.Replicas < 3 {
		t.Errorf("replicas %d, want at least 3", g.dep.Spec.Replicas)
	}
	labels := g.dep.Spec.Template.Metadata.Labels
	if len(g.dep.Spec.Selector.MatchLabels) == 0 || !selects(g.dep.Spec.Selector.MatchLabels, labels) {
		t.Errorf("the Deployment's selector %v does not select its pods %v", g.dep.Spec.Selector.MatchLabels, labels)
	}
	for _, r := range []string{"cpu", "memory"} {
		if g.c.Resources.Requests[r] == "" {
			t.Errorf("no resources.requests.%s", r)
		}
	}
	if g.c.Resources.Limits["memory"] == "" {
		t.Error("no resources.limits.memory")
	}
	sc := g.c.SecurityContext
	nonRoot := g.pod.SecurityContext.RunAsNonRoot
	if sc.RunAsNonRoot != nil {
		nonRoot = sc.RunAsNonRoot // the container's setting wins
	}
	if !isTrue(nonRoot) || (g.pod.SecurityContext.RunAsNonRoot != nil && !*g.pod.SecurityContext.RunAsNonRoot) {
		t.Error("securityContext.runAsNonRoot is not true")
	}
	if u := g.pod.SecurityContext.RunAsUser; u != nil {
		if want, _, _ := strings.Cut(img.User, ":"); strconv.Itoa(*u) != want {
			t.Errorf("runAsUser %d, the image's USER is %s", *u, img.User)
		}
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation is not false")
	}
	if !isTrue(sc.ReadOnlyRootFilesystem) {
		t.Error("readOnlyRootFilesystem is not true")
	}
	if !contains(sc.Capabilities.Drop, "ALL") {
		t.Error("capabilities do not drop ALL")
	}
	if !strings.Contains(c.Store, "://") {
		t.Errorf("store %s: a file store on a read-only root file system, shared by no replica", c.Store)
	}

	// Secrets: the signing key is a file of the Secret mounted in the pod.
	if c.Signing.KeyFile == "" {
		t.Error("no signing.key_file: replicas would keep a generated key in the store, readable by anyone who reads it")
	} else if pem := g.fileText(t, m, c.Signing.KeyFile, false); pem == "" {
		t.Errorf("signing.key_file %s is empty", c.Signing.KeyFile)
	}
	for _, v := range c.Signing.VerifyKeyFiles {
		g.fileText(t, m, v, false)
	}

	// The pod outlives the drain.
	grace := 30 // Kubernetes' default
	if g.pod.TerminationGracePeriodSeconds != nil {
		grace = *g.pod.TerminationGracePeriodSeconds
	}
	pause := 0
	if ps := g.c.Lifecycle.PreStop; ps != nil && ps.Sleep != nil {
		pause = ps.Sleep.Seconds
	}
	if need := pause + int(c.ShutdownTimeout.D().Seconds()); grace <= need {
		t.Errorf("terminationGracePeriodSeconds %d, want more than preStop %ds + shutdown_timeout %s", grace, pause, c.ShutdownTimeout.D())
	}

	// Telemetry: the binary accepts the OTEL_* values and exports traces.
	otel := map[string]string{}
	for k, v := range g.env {
		if strings.HasPrefix(k, "OTEL_") {
			otel[k] = v
		}
	}
	if otel["OTEL_EXPORTER_OTLP_ENDPOINT"] == "" && otel["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] == "" {
		t.Error("no OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	checkTelemetryEnv(t, "Deployment", otel)
}

// TestKubernetesServiceAndPDB: the Service and the PodDisruptionBudget
// select the Deployment's pods; the Service's target ports are the
// listeners; the budget keeps two pods and still lets drains proceed.
func TestKubernetesServiceAndPDB(t *testing.T) {
	m := loadKubernetes(t)
	g := loadK8sGateway(t, m, loadDockerImage(t))
	c := g.serveConfig(t)
	labels := g.dep.Spec.Template.Metadata.Labels
	_, proxy := addrPort(t, "listen", c.Listen)
	_, control := addrPort(t, "api_listen", c.APIListen)

	var svc k8sService
	m.one(t, "Service", &svc)
	if len(svc.Spec.Selector) == 0 || !selects(svc.Spec.Selector, labels) {
		t.Errorf("the Service's selector %v does not select the pods %v", svc.Spec.Selector, labels)
	}
	targets := map[int]bool{}
	for _, p := range svc.Spec.Ports {
		tp := p.TargetPort
		if tp.Value == "" {
			tp = yaml.Node{Kind: yaml.ScalarNode, Value: strconv.Itoa(p.Port)}
		}
		n := g.port(t, "Service port "+p.Name, tp)
		if n != proxy && n != control {
			t.Errorf("Service port %s targets %d, fencegw listens on %d and %d", p.Name, n, proxy, control)
		}
		targets[n] = true
	}
	if !targets[proxy] || !targets[control] {
		t.Errorf("the Service targets %v, want the proxy %d and the control API %d", targets, proxy, control)
	}

	var pdb k8sPDB
	m.one(t, "PodDisruptionBudget", &pdb)
	if len(pdb.Spec.Selector.MatchLabels) == 0 || !selects(pdb.Spec.Selector.MatchLabels, labels) {
		t.Errorf("the PodDisruptionBudget's selector %v does not select the pods %v", pdb.Spec.Selector.MatchLabels, labels)
	}
	replicas := g.dep.Spec.Replicas
	switch {
	case pdb.Spec.MinAvailable.Kind != 0 && pdb.Spec.MaxUnavailable.Kind == 0:
		n, err := strconv.Atoi(pdb.Spec.MinAvailable.Value)
		if err != nil || n < 2 || n >= replicas {
			t.Errorf("minAvailable %q with %d replicas: want at least 2, and below the replicas so drains proceed",
				pdb.Spec.MinAvailable.Value, replicas)
		}
	case pdb.Spec.MaxUnavailable.Kind != 0 && pdb.Spec.MinAvailable.Kind == 0:
		n, err := strconv.Atoi(pdb.Spec.MaxUnavailable.Value)
		if err != nil || n < 1 || replicas-n < 2 {
			t.Errorf("maxUnavailable %q with %d replicas: want at least 1, keeping at least 2 pods",
				pdb.Spec.MaxUnavailable.Value, replicas)
		}
	default:
		t.Error("the PodDisruptionBudget needs exactly one of minAvailable and maxUnavailable")
	}
}

// TestKubernetesSecretPlaceholders: the Secret holds every key the
// Deployment reads and nothing else, each value a marked placeholder — no
// real credential lives in the repository.
func TestKubernetesSecretPlaceholders(t *testing.T) {
	m := loadKubernetes(t)
	g := loadK8sGateway(t, m, loadDockerImage(t))
	used := map[string]bool{}
	for _, e := range g.c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			used[e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key] = true
		}
	}
	for _, v := range g.pod.Volumes {
		if v.Secret != nil {
			for _, it := range v.Secret.Items {
				used[v.Secret.SecretName+"/"+it.Key] = true
			}
		}
	}
	for _, o := range m.byKind["Secret"] {
		var d k8sData
		decodeYAML(t, o.file, o.node, &d)
		if len(d.Data) > 0 {
			t.Errorf("Secret %s: use stringData with readable placeholders, not data", o.Metadata.Name)
		}
		for k, v := range d.StringData {
			if !strings.Contains(v, "REPLACE_ME") {
				t.Errorf("Secret %s, %s: not a REPLACE_ME placeholder", o.Metadata.Name, k)
			}
			if !used[o.Metadata.Name+"/"+k] {
				t.Errorf("Secret %s, %s: the Deployment does not use it", o.Metadata.Name, k)
			}
			delete(used, o.Metadata.Name+"/"+k)
		}
	}
	for k := range used {
		t.Errorf("the Deployment reads %s, which no Secret holds", k)
	}
}

func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func isTrue(b *bool) bool { return b != nil && *b }
