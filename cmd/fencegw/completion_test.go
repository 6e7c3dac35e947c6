package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompletionScripts: `fencegw completion bash|zsh|fish` print a script
// for the shell; bash parses the bash one (bash -n), sources it and then
// completes fencegw; zsh and fish check theirs when installed.
func TestCompletionScripts(t *testing.T) {
	dir := t.TempDir()
	for shell, want := range map[string]string{"bash": "complete -o default -F __start_fencegw fencegw",
		"zsh": "#compdef fencegw", "fish": "complete -c fencegw"} {
		out, stderr, code := runCLI(t, "completion", shell)
		if code != 0 || stderr != "" || !strings.Contains(out, want) {
			t.Errorf("completion %s: exit %d, stderr %q, script lacks %q", shell, code, stderr, want)
			continue
		}
		script := filepath.Join(dir, "fencegw."+shell)
		if err := os.WriteFile(script, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		var check *exec.Cmd
		switch shell {
		case "bash":
			check = exec.Command("bash", "-n", script)
		case "zsh", "fish":
			if _, err := exec.LookPath(shell); err != nil {
				t.Logf("no %s: its script is not checked", shell)
				continue
			}
			check = exec.Command(shell, "-n", script)
		}
		if b, err := check.CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", shell, err, b)
		}
	}
	// bash sources the script and has a completion for fencegw.
	src := filepath.Join(dir, "fencegw.bash")
	b, err := exec.Command("bash", "-c", `source "$1" && complete -p fencegw`, "bash", src).CombinedOutput()
	if err != nil || !strings.Contains(string(b), "__start_fencegw") {
		t.Errorf("bash source: %v\n%s", err, b)
	}
}

// TestCompletionCandidates: the completion the scripts ask the binary for
// offers the commands and subcommands.
func TestCompletionCandidates(t *testing.T) {
	for args, want := range map[string][]string{
		"__complete le":                      {"lease"},
		"__complete lease a":                 {"acquire"},
		"__complete keys ":                   {"generate", "api-key"},
		"__complete help con":                {"config"},
		"__complete probe --ti":              {"--timeout"},
		"__complete keys generate --alg ":    {"EdDSA", "ES256", "HS256"},
		"__complete lease get --log-format ": {"text", "json"},
	} {
		f := strings.Fields(args)
		if strings.HasSuffix(args, " ") {
			f = append(f, "")
		}
		out, _, code := runCLI(t, f...)
		for _, w := range want {
			if code != 0 || !strings.Contains(out, w) {
				t.Errorf("fencegw %s: exit %d, offers %q; want %q", args, code, out, w)
			}
		}
	}
}
