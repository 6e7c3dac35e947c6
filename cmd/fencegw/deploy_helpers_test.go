package main

// Helpers for the tests of deploy/ (deploy_*_test.go): no Docker engine or
// Kubernetes cluster runs here, so the tests parse every manifest and check
// it against this binary — its flags, its configuration keys and
// validation, its ports and probe paths — and run the binary on the
// configurations the manifests ship.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/fencegw/fencegw/config"
)

// deployDir is deploy/ seen from this package; repoRoot the repository.
const (
	deployDir = "../../deploy"
	repoRoot  = "../.."
)

// deployFile is the path of a file under deploy/ (slash-separated).
func deployFile(rel string) string { return filepath.Join(deployDir, filepath.FromSlash(rel)) }

func readDeployFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(deployFile(rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// yamlDocuments decodes every document of a (multi-document) YAML text.
func yamlDocuments(t *testing.T, name, text string) []*yaml.Node {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(text))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: not YAML: %v", name, err)
		}
		if len(n.Content) > 0 && !(n.Content[0].Kind == yaml.ScalarNode && n.Content[0].Tag == "!!null") {
			docs = append(docs, &n)
		}
	}
}

// decodeYAML decodes one YAML node into v; name is for messages.
func decodeYAML(t *testing.T, name string, n *yaml.Node, v any) {
	t.Helper()
	if err := n.Decode(v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// configVarRE matches ${NAME} and ${NAME:-default} as config.Parse expands
// them ($$ is a literal $, removed before matching).
var configVarRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`)

// configVars returns the variables a configuration text expands: each name
// and whether it has a default.
func configVars(text string) map[string]bool {
	vars := map[string]bool{}
	for _, m := range configVarRE.FindAllStringSubmatch(strings.ReplaceAll(text, "$$", ""), -1) {
		vars[m[1]] = vars[m[1]] || m[2] != ""
	}
	return vars
}

// writeConfig writes a configuration text to a temporary file, sets the
// variables it expands in the test's environment (config.Parse expands
// ${NAME} from the process environment), and returns the file's path.
func writeConfig(t *testing.T, name, text string, env map[string]string) string {
	t.Helper()
	for v, hasDefault := range configVars(text) {
		val, ok := env[v]
		if !ok && !hasDefault {
			t.Fatalf("%s expands ${%s}, which the deployment does not set", name, v)
		}
		if ok {
			t.Setenv(v, val)
		}
	}
	p := filepath.Join(t.TempDir(), path.Base(name))
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkServeArgs runs a deployment's `fencegw serve …` arguments (args[0]
// is "serve") through the binary's own flag parsing and validation, with
// every path in files (as seen in the container or on the host) replaced by
// the local file standing for it. It returns the resulting configuration.
func checkServeArgs(t *testing.T, where string, args []string, files map[string]string) config.Config {
	t.Helper()
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("%s: command %q, want serve …", where, args)
	}
	local := make([]string, 0, len(args)-1)
	for _, a := range args[1:] {
		if name, val, ok := strings.Cut(a, "="); ok && strings.HasPrefix(name, "-") {
			if f, ok := files[val]; ok {
				a = name + "=" + f
			}
		} else if f, ok := files[a]; ok {
			a = f
		}
		local = append(local, a)
	}
	var stderr bytes.Buffer
	c, err := loadServeConfig(local, &stderr)
	if err != nil {
		t.Fatalf("%s: fencegw refuses %q: %v\n%s", where, args, err, stderr.String())
	}
	return c
}

// flagValue returns the value of --name (or -name) in args.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if a == name && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// addrPort returns the host and port of a listen address.
func addrPort(t *testing.T, field, addr string) (string, int) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%s %q: %v", field, addr, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n <= 0 {
		t.Fatalf("%s %q: want a fixed port", field, addr)
	}
	return host, n
}

// requireAllInterfaces checks that a listen address in a container binds
// every interface, so that other containers, the Service and the kubelet
// reach it.
func requireAllInterfaces(t *testing.T, where, field, addr string) int {
	t.Helper()
	host, port := addrPort(t, field, addr)
	switch host {
	case "", "0.0.0.0", "::":
	default:
		t.Errorf("%s: %s %q: in a container, listen on 0.0.0.0 (or [::]) to be reachable from outside", where, field, addr)
	}
	return port
}

// apiKeyFor returns the name of the configured API key whose hash is that
// of key, and whether it may use the lease name.
func apiKeyFor(c config.Config, key, lease string) (name string, mayUse bool) {
	sum := sha256.Sum256([]byte(key))
	h := hex.EncodeToString(sum[:])
	for _, k := range c.APIKeys {
		if !strings.EqualFold(k.SHA256, h) {
			continue
		}
		if k.Admin {
			return k.Name, true
		}
		for _, p := range k.Leases {
			if ok, _ := path.Match(p, lease); ok {
				return k.Name, true
			}
		}
		return k.Name, false
	}
	return "", false
}

// testAPIKeys makes plausible API keys for hashes a deployment takes from
// its secrets: value returns the hash for a secret's name and remembers
// the key behind it.
type testAPIKeys map[string]string // hex SHA-256 → key

func (k testAPIKeys) hashFor(secretName string) string {
	key := "fgw_deploy-test-" + secretName
	sum := sha256.Sum256([]byte(key))
	h := hex.EncodeToString(sum[:])
	k[h] = key
	return h
}

// adminKey returns a key of an admin entry of c, among those made by k.
func (k testAPIKeys) adminKey(t *testing.T, c config.Config) string {
	t.Helper()
	for _, e := range c.APIKeys {
		if key, ok := k[strings.ToLower(e.SHA256)]; ok && e.Admin {
			return key
		}
	}
	t.Fatal("no admin API key in the configuration")
	return ""
}

// plausibleSecret is a stand-in for a secret value, by the secret's name.
func plausibleSecret(keys testAPIKeys, name string) string {
	if strings.HasSuffix(strings.ToLower(strings.ReplaceAll(name, "_", "-")), "sha256") {
		return keys.hashFor(name)
	}
	return "deploy-test-" + strings.ReplaceAll(name, ".", "-")
}
