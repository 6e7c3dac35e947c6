package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencegw/fencegw/config"
)

// TestDeployExampleIsValid keeps deploy/fencegw.yaml loadable.
func TestDeployExampleIsValid(t *testing.T) {
	if _, err := config.Load("../../deploy/fencegw.yaml"); err != nil {
		t.Fatal(err)
	}
}

// TestDeployConfigFilesLoad: every fencegw configuration file in deploy/
// loads and validates (config.Parse refuses unknown keys), with the
// variables it expands set.
func TestDeployConfigFilesLoad(t *testing.T) {
	for _, rel := range []string{"fencegw.yaml", "docker/fencegw.yaml", "compose/fencegw.yaml"} {
		text := readDeployFile(t, rel)
		env := map[string]string{}
		for v := range configVars(text) {
			env[v] = plausibleSecret(testAPIKeys{}, v)
		}
		if _, err := config.Load(writeConfig(t, rel, text, env)); err != nil {
			t.Errorf("deploy/%s: %v", rel, err)
		}
	}
}

// systemdUnit is the [Service] section of deploy/systemd/fencegw.service.
type systemdUnit map[string][]string

// systemdInstalled maps the paths the unit uses to the files of deploy/
// installed there (see the unit's header).
var systemdInstalled = map[string]string{"/etc/fencegw/fencegw.yaml": "../../deploy/fencegw.yaml"}

func loadSystemdUnit(t *testing.T) systemdUnit {
	t.Helper()
	f, err := os.Open("../../deploy/systemd/fencegw.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := systemdUnit{}
	section := ""
	for s := bufio.NewScanner(f); s.Scan(); {
		line := strings.TrimSpace(s.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("fencegw.service: %q", line)
			}
			u[k] = append(u[k], v)
		}
	}
	return u
}

// exec returns the argv of an Exec*= line, its systemd prefixes removed.
func (u systemdUnit) exec(key string) [][]string {
	var out [][]string
	for _, v := range u[key] {
		out = append(out, strings.Fields(strings.TrimLeft(v, "-+!@:")))
	}
	return out
}

func (u systemdUnit) last(key string) string {
	if vs := u[key]; len(vs) > 0 {
		return vs[len(vs)-1]
	}
	return ""
}

// TestSystemdUnitMatchesBinary checks that every fencegw command of the
// unit (ExecStartPre, ExecStart) is one the binary accepts, with the
// example configuration installed at /etc/fencegw; that systemd waits for
// the drain; and that the embedded store lives in the StateDirectory.
func TestSystemdUnitMatchesBinary(t *testing.T) {
	u := loadSystemdUnit(t)
	starts := u.exec("ExecStart")
	if len(starts) != 1 {
		t.Fatalf("%d ExecStart lines, want 1", len(starts))
	}
	var c config.Config
	for _, key := range []string{"ExecStartPre", "ExecStart"} {
		for _, argv := range u.exec(key) {
			if len(argv) < 2 || !strings.HasSuffix(argv[0], "/fencegw") {
				continue
			}
			switch argv[1] {
			case "serve":
				c = checkServeArgs(t, "fencegw.service "+key, argv[1:], systemdInstalled)
			case "config":
				args := replaceArg(argv[2:], "/etc/fencegw/fencegw.yaml", systemdInstalled["/etc/fencegw/fencegw.yaml"])
				out, err := exec.Command(binary, append([]string{"config"}, args...)...).CombinedOutput()
				if err != nil {
					t.Errorf("%s %q: %v\n%s", key, argv, err, out)
				}
			default:
				t.Errorf("%s %q: a fencegw command the test does not know", key, argv)
			}
		}
	}
	if c.Listen == "" {
		t.Fatal("ExecStart does not run fencegw serve")
	}
	if u.last("KillSignal") != "" && u.last("KillSignal") != "SIGTERM" {
		t.Errorf("KillSignal=%s: fencegw drains on SIGTERM", u.last("KillSignal"))
	}
	stop, err := time.ParseDuration(u.last("TimeoutStopSec") + "s")
	if err != nil || stop <= c.ShutdownTimeout.D() {
		t.Errorf("TimeoutStopSec=%s, want more than shutdown_timeout %s", u.last("TimeoutStopSec"), c.ShutdownTimeout.D())
	}
	if config.KindOf(c.Store) == config.StoreEmbedded {
		state := u.last("StateDirectory")
		if state == "" || path.Dir(c.Store) != "/var/lib/"+state {
			t.Errorf("store %s is not in StateDirectory=%s (/var/lib/%s)", c.Store, state, state)
		}
	}
	if u.last("ProtectSystem") == "strict" && config.KindOf(c.Store) == config.StoreEmbedded &&
		!strings.HasPrefix(c.Store, "/var/lib/") {
		t.Errorf("ProtectSystem=strict leaves %s read-only", c.Store)
	}
}

// TestSystemdReloadSignal: the unit's ExecReload sends SIGHUP, and the
// binary rereads its configuration on SIGHUP instead of dying.
func TestSystemdReloadSignal(t *testing.T) {
	u := loadSystemdUnit(t)
	reloads := u.exec("ExecReload")
	if len(reloads) == 0 {
		t.Skip("no ExecReload")
	}
	if r := reloads[0]; len(r) != 3 || path.Base(r[0]) != "kill" || r[1] != "-HUP" || r[2] != "$MAINPID" {
		t.Fatalf("ExecReload=%q, want kill -HUP $MAINPID", r)
	}
	store := filepath.Join(t.TempDir(), "fencegw.db")
	p := start(t, "--config", systemdInstalled["/etc/fencegw/fencegw.yaml"], "--store", store)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.stderr.String(), "routes reloaded") {
		if time.Now().After(deadline) {
			t.Fatalf("no reload after SIGHUP:\n%s", p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	expectStatus(t, "after SIGHUP", p.api+"/healthz", "", http.StatusOK)
}
