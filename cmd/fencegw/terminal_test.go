package main

import (
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeFatalErrorFormat: a fatal error of serve is one line of text
// ("fencegw serve: …") when stderr is a terminal, a JSON log line when it
// is not, and --log-format decides either way.
func TestServeFatalErrorFormat(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	dir := t.TempDir()
	serve := func(extra ...string) []string {
		return append([]string{"serve", "--listen", held.Addr().String(), "--api-listen", freeAddr(t),
			"--route", "/a/=http://127.0.0.1:9", "--store", filepath.Join(dir, "s.db")}, extra...)
	}
	isText := func(s string) bool {
		return strings.Contains(s, "fencegw serve: ") && !strings.Contains(s, `"level":"ERROR"`)
	}
	isJSON := func(s string) bool {
		return strings.Contains(s, `"msg":"fencegw stopped"`) && !strings.Contains(s, "fencegw serve: ")
	}

	if _, stderr, code := runCLI(t, serve()...); code != exitFailure || !isJSON(stderr) {
		t.Errorf("not a terminal: exit %d, stderr %q; want a JSON log line", code, stderr)
	}
	if _, stderr, code := runCLI(t, serve("--log-format", "text")...); code != exitFailure || !isText(stderr) {
		t.Errorf("not a terminal, --log-format text: exit %d, stderr %q; want text", code, stderr)
	}
	if _, err := exec.LookPath("script"); err != nil {
		t.Skipf("no script(1) to run fencegw on a terminal: %v", err)
	}
	for extra, text := range map[string]bool{"": true, "--log-format json": false} {
		out, code := onTerminal(t, serve(strings.Fields(extra)...)...)
		if code != exitFailure || (text && !isText(out)) || (!text && !isJSON(out)) {
			t.Errorf("on a terminal, %q: exit %d, output %q; want text %v", extra, code, out, text)
		}
	}
}

// onTerminal runs the fencegw binary with args on a pseudo-terminal
// (script(1)) and returns what it wrote there and its exit code.
func onTerminal(t *testing.T, args ...string) (string, int) {
	t.Helper()
	q := []string{shellQuote(binary)}
	for _, a := range args {
		q = append(q, shellQuote(a))
	}
	cmd := exec.Command("script", "-qefc", strings.Join(q, " "), "/dev/null")
	out, err := cmd.Output()
	return string(out), exitCode(err)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestLogFormatJSON: --log-format json makes a command's error one JSON
// log line naming the command and the exit code; another value is bad usage.
func TestLogFormatJSON(t *testing.T) {
	_, stderr, code := runCLI(t, "lease", "get", "jobs", "--api", "http://127.0.0.1:1", "--log-format", "json")
	var line struct {
		Level, Msg, Command string
		ExitCode            int `json:"exit_code"`
	}
	if code != exitFailure || json.Unmarshal([]byte(stderr), &line) != nil || line.Level != "ERROR" ||
		line.Command != "fencegw lease get" || line.ExitCode != 1 || !strings.Contains(line.Msg, "refused") {
		t.Errorf("exit %d, stderr %q; want one JSON line", code, stderr)
	}
	if _, stderr, code := runCLI(t, "config", "example", "--log-format", "xml"); code != exitUsage || !strings.Contains(stderr, `--log-format "xml"`) {
		t.Errorf("--log-format xml: exit %d, %q", code, stderr)
	}
}
