package main

import (
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/config"
)

// dockerInstr is one Dockerfile instruction.
type dockerInstr struct {
	Cmd   string            // FROM, RUN, COPY, … (upper case)
	Flags map[string]string // --from=build, --chown=…, --mount=… (the last of each)
	Args  string            // the rest, flags removed
	Line  int
}

// dockerStage is one FROM … [AS name] and its instructions.
type dockerStage struct {
	Name, Image string
	Instrs      []dockerInstr
}

// parseDockerfile reads a Dockerfile: continuation lines joined, comments
// and parser directives dropped, instructions grouped by stage.
func parseDockerfile(t *testing.T, text string) []dockerStage {
	t.Helper()
	var (
		stages  []dockerStage
		pending strings.Builder
		start   int
	)
	lines := strings.Split(text, "\n")
	for i, raw := range lines {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "#") || (line == "" && pending.Len() == 0) {
			continue
		}
		if pending.Len() == 0 {
			start = i + 1
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			pending.WriteString(cont + " ")
			continue
		}
		pending.WriteString(line)
		full := strings.TrimSpace(pending.String())
		pending.Reset()
		if full == "" {
			continue
		}
		cmd, rest, _ := strings.Cut(full, " ")
		in := dockerInstr{Cmd: strings.ToUpper(cmd), Flags: map[string]string{}, Line: start}
		rest = strings.TrimSpace(rest)
		for strings.HasPrefix(rest, "--") {
			flag, after, _ := strings.Cut(rest, " ")
			name, val, _ := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
			in.Flags[name] = val
			rest = strings.TrimSpace(after)
		}
		in.Args = rest
		if in.Cmd == "FROM" {
			f := strings.Fields(rest)
			s := dockerStage{Image: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.Name = f[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			if in.Cmd == "ARG" {
				continue // ARG before the first FROM
			}
			t.Fatalf("Dockerfile line %d: %s before any FROM", in.Line, in.Cmd)
		}
		stages[len(stages)-1].Instrs = append(stages[len(stages)-1].Instrs, in)
	}
	return stages
}

// find returns the stage's instructions of one kind.
func (s dockerStage) find(cmd string) []dockerInstr {
	var out []dockerInstr
	for _, in := range s.Instrs {
		if in.Cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// execForm decodes a JSON-array (exec form) CMD or ENTRYPOINT.
func (in dockerInstr) execForm(t *testing.T) []string {
	t.Helper()
	var args []string
	if err := json.Unmarshal([]byte(in.Args), &args); err != nil {
		t.Fatalf("Dockerfile line %d: %s %s: use the exec (JSON array) form: the image has no shell", in.Line, in.Cmd, in.Args)
	}
	return args
}

// healthcheck decodes a HEALTHCHECK: its command in exec form (nil for
// NONE) and its timeout.
func (in dockerInstr) healthcheck(t *testing.T) ([]string, time.Duration) {
	t.Helper()
	if in.Args == "NONE" {
		return nil, 0
	}
	cmd, ok := strings.CutPrefix(in.Args, "CMD ")
	if !ok {
		t.Fatalf("Dockerfile line %d: HEALTHCHECK %s: want CMD [...]", in.Line, in.Args)
	}
	args := dockerInstr{Cmd: "HEALTHCHECK CMD", Args: strings.TrimSpace(cmd), Line: in.Line}.execForm(t)
	timeout := 30 * time.Second
	if v, ok := in.Flags["timeout"]; ok {
		timeout = mustDuration(t, "Dockerfile HEALTHCHECK --timeout", v)
	}
	return args, timeout
}

// shellFields splits a shell command line into words, honouring quotes.
func shellFields(s string) []string {
	var (
		out   []string
		cur   strings.Builder
		quote rune
		inTok bool
	)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inTok = r, true
		case r == ' ' || r == '\t':
			if inTok {
				out = append(out, cur.String())
				cur.Reset()
				inTok = false
			}
		default:
			cur.WriteRune(r)
			inTok = true
		}
	}
	if inTok {
		out = append(out, cur.String())
	}
	return out
}

// dockerImage is what the tests need to know of deploy/Dockerfile.
type dockerImage struct {
	Stages     []dockerStage
	Final      dockerStage
	Entrypoint []string
	Cmd        []string
	Expose     map[int]bool
	User       string
	// Files maps a path in the image to the repository file copied there.
	Files map[string]string
	// Build is the words of the build stage's go build command, with the
	// environment assignments before it; Output is its -o path.
	BuildEnv, Build []string
	Output          string
	// Binary is where the final stage puts the binary.
	Binary string
	// Healthcheck is the HEALTHCHECK's command (exec form), nil without
	// one; HealthcheckTimeout its --timeout (Docker's default: 30s).
	Healthcheck        []string
	HealthcheckTimeout time.Duration
}

func loadDockerImage(t *testing.T) dockerImage {
	t.Helper()
	stages := parseDockerfile(t, readDeployFile(t, "Dockerfile"))
	if len(stages) < 2 {
		t.Fatalf("deploy/Dockerfile has %d stages, want a build stage and a final one", len(stages))
	}
	img := dockerImage{Stages: stages, Final: stages[len(stages)-1], Expose: map[int]bool{}, Files: map[string]string{}}
	for _, s := range stages[:len(stages)-1] {
		for _, in := range s.find("RUN") {
			f := shellFields(in.Args)
			for i := 0; i+1 < len(f); i++ {
				if f[i] == "go" && f[i+1] == "build" {
					img.BuildEnv, img.Build = f[:i], f[i:]
					if o, ok := flagValue(f[i+2:], "o"); ok {
						img.Output = o
					}
				}
			}
		}
	}
	for _, in := range img.Final.Instrs {
		switch in.Cmd {
		case "ENTRYPOINT":
			img.Entrypoint = in.execForm(t)
		case "CMD":
			img.Cmd = in.execForm(t)
		case "USER":
			img.User = in.Args
		case "HEALTHCHECK":
			img.Healthcheck, img.HealthcheckTimeout = in.healthcheck(t)
		case "EXPOSE":
			for _, p := range strings.Fields(in.Args) {
				n, err := strconv.Atoi(strings.TrimSuffix(p, "/tcp"))
				if err != nil {
					t.Fatalf("Dockerfile line %d: EXPOSE %q", in.Line, p)
				}
				img.Expose[n] = true
			}
		case "COPY", "ADD":
			f := strings.Fields(in.Args)
			if len(f) != 2 {
				continue
			}
			if from, ok := in.Flags["from"]; ok {
				if from == stages[0].Name && f[0] == img.Output {
					img.Binary = f[1]
				}
				continue
			}
			img.Files[f[1]] = filepath.Join(repoRoot, filepath.FromSlash(f[0]))
		}
	}
	return img
}

// args returns the fencegw arguments a container runs with: the image's
// ENTRYPOINT must be the binary; command replaces CMD when given.
func (img dockerImage) args(t *testing.T, where string, entrypoint, command []string) []string {
	t.Helper()
	ep := img.Entrypoint
	if len(entrypoint) > 0 {
		ep = entrypoint
	}
	if len(ep) == 0 || ep[0] != img.Binary {
		t.Fatalf("%s: entrypoint %q does not run the image's binary %s", where, ep, img.Binary)
	}
	args := append([]string(nil), ep[1:]...)
	if len(command) > 0 {
		return append(args, command...)
	}
	if len(entrypoint) > 0 {
		return args // an entrypoint given in a manifest drops the image's CMD
	}
	return append(args, img.Cmd...)
}

// TestDockerfileStages: a Go build stage and a small non-root final stage
// that runs the binary built from ./cmd/fencegw.
func TestDockerfileStages(t *testing.T) {
	img := loadDockerImage(t)
	if build := img.Stages[0]; !strings.HasPrefix(build.Image, "golang:1.26") || build.Name == "" {
		t.Errorf("build stage FROM %s AS %q, want golang:1.26… AS <name>", build.Image, build.Name)
	}
	if len(img.Build) == 0 {
		t.Fatal("no go build in the build stage")
	}
	line := strings.Join(append(append([]string(nil), img.BuildEnv...), img.Build...), " ")
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-X main.version=", "./cmd/fencegw"} {
		if !strings.Contains(line, want) {
			t.Errorf("the build command %q lacks %q", line, want)
		}
	}
	if img.Output == "" || img.Binary == "" {
		t.Fatalf("the build's output (-o %q) is not copied into the final stage", img.Output)
	}
	base := img.Final.Image
	nonrootBase := strings.HasPrefix(base, "gcr.io/distroless/") && strings.HasSuffix(base, ":nonroot")
	if !nonrootBase && !strings.HasPrefix(base, "gcr.io/distroless/static") && base != "scratch" {
		t.Errorf("final stage FROM %s: want a distroless static image or scratch (the binary is static)", base)
	}
	uid, _, _ := strings.Cut(img.User, ":")
	if n, err := strconv.Atoi(uid); img.User != "" && (err != nil || n == 0) {
		t.Errorf("USER %q: want a numeric, non-root user (Kubernetes runAsNonRoot checks numbers)", img.User)
	} else if img.User == "" && !nonrootBase {
		t.Error("the final stage runs as root: set USER 65532:65532 or use a :nonroot base")
	}
	// Whatever the manifests run in this image must be in the image.
	for dst, src := range img.Files {
		if _, err := os.Stat(src); err != nil {
			t.Errorf("COPY %s: %v", dst, err)
		}
	}
}

// TestDockerfileDefaultCommand: the image's own ENTRYPOINT and CMD start a
// gateway the binary accepts, on the baked configuration, listening on
// every interface on the EXPOSEd ports, with a writable store directory.
func TestDockerfileDefaultCommand(t *testing.T) {
	img := loadDockerImage(t)
	args := img.args(t, "Dockerfile", nil, nil)
	cfgPath, ok := flagValue(args, "config")
	if !ok || img.Files[cfgPath] == "" {
		t.Fatalf("CMD %q: --config must name a configuration COPYed into the image", img.Cmd)
	}
	c := checkServeArgs(t, "Dockerfile ENTRYPOINT+CMD", args, img.Files)
	proxy := requireAllInterfaces(t, "Dockerfile", "listen", c.Listen)
	_, control := addrPort(t, "api_listen", c.APIListen)
	want := map[int]bool{proxy: true, control: true}
	if len(img.Expose) != 2 || !img.Expose[proxy] || !img.Expose[control] {
		t.Errorf("EXPOSE %v, want the ports of listen and api_listen %v", img.Expose, want)
	}
	if !c.ControlAuthenticated() && !config.IsLoopback(c.APIListen) {
		t.Errorf("the baked configuration has no api_keys but api_listen %s", c.APIListen)
	}
	// The HEALTHCHECK probes this configuration's /readyz from inside.
	if hc := img.Healthcheck; len(hc) < 2 || hc[0] != img.Binary {
		t.Errorf("HEALTHCHECK %q: want the binary's probe (the image has no shell or curl)", hc)
	} else {
		checkProbeCommand(t, "Dockerfile HEALTHCHECK", hc[1:], c, "/readyz", img.HealthcheckTimeout)
	}
	// An embedded store needs its directory, owned by the image's user.
	if !strings.Contains(c.Store, "://") {
		dir := path.Dir(c.Store)
		owned := false
		for _, in := range img.Final.find("COPY") {
			f := strings.Fields(in.Args)
			if len(f) == 2 && path.Clean(f[1]) == dir && in.Flags["chown"] != "" && in.Flags["chown"] == img.User {
				owned = true
			}
		}
		if !owned {
			t.Errorf("store %s: the image must create %s owned by USER %s", c.Store, dir, img.User)
		}
	}
}

// TestDockerfileBuildCommand runs the Dockerfile's own go build line (with
// a version) and checks that the version lands in main.version and that
// the binary is static, as a distroless static or scratch base needs.
func TestDockerfileBuildCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	img := loadDockerImage(t)
	const version = "deploy-test-1.2.3"
	out := filepath.Join(t.TempDir(), "fencegw")
	expand := func(s string) string {
		return strings.NewReplacer("${VERSION}", version, "$VERSION", version).Replace(s)
	}
	var args []string
	for i := 1; i < len(img.Build); i++ { // after "go"
		a := expand(img.Build[i])
		if img.Build[i-1] == "-o" {
			a = out
		}
		args = append(args, a)
	}
	build := exec.Command("go", args...)
	build.Dir = repoRoot
	build.Env = os.Environ()
	for _, kv := range img.BuildEnv {
		build.Env = append(build.Env, expand(kv))
	}
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	got, err := exec.Command(out, "version").Output()
	if err != nil || strings.TrimSpace(string(got)) != "fencegw "+version {
		t.Fatalf("fencegw version = %q, %v; want fencegw %s", got, err, version)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary is dynamically linked (it has an interpreter): a static base cannot run it")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v", libs)
	}
}

// TestDockerignoreKeepsSources: the build context keeps what the build and
// the final stage need.
func TestDockerignoreKeepsSources(t *testing.T) {
	var patterns []string
	for _, l := range strings.Split(readDeployFile(t, "Dockerfile.dockerignore"), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	excluded := func(p string) bool {
		out := false
		for _, pat := range patterns {
			neg := strings.HasPrefix(pat, "!")
			pat = strings.TrimPrefix(pat, "!")
			for q := p; q != "." && q != "/"; q = path.Dir(q) {
				m, _ := path.Match(pat, q)
				if rest, ok := strings.CutPrefix(pat, "**/"); ok && !m {
					m, _ = path.Match(rest, path.Base(q))
				}
				if m {
					out = !neg
					break
				}
			}
		}
		return out
	}
	img := loadDockerImage(t)
	need := []string{"go.mod", "go.sum", "cmd/fencegw/main.go", "config/example.yaml"}
	for _, src := range img.Files {
		rel, _ := filepath.Rel(repoRoot, src)
		need = append(need, filepath.ToSlash(rel))
	}
	for _, p := range need {
		if excluded(p) {
			t.Errorf("deploy/Dockerfile.dockerignore excludes %s, which the image needs", p)
		}
	}
}
