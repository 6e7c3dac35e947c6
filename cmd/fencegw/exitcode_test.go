package main

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// exitRow is what the exit-code table says of one command: arguments that
// are bad usage, and arguments that fail at run time (or why none can).
type exitRow struct {
	badUsage  []string // after the command's path: exit 2 (probe: 1)
	usageCode int      // 0 means exitUsage
	failure   []string // after the command's path: exit 1
	noFailure string   // why the command has no runtime failure to test
}

// exitTable returns the exit-code table of docs/cli.md for every command:
// --help, -h and help CMD exit 0 with the usage on stdout; an unknown flag
// and badUsage exit 2 (probe 1); failure exits 1.
func exitTable(t *testing.T) map[string]exitRow {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.pem")
	if err := os.WriteFile(existing, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Close() })
	busy := held.Addr().String()
	down := "http://127.0.0.1:1" // nothing listens on port 1
	group := exitRow{badUsage: []string{"frob"}, noFailure: "groups commands"}
	return map[string]exitRow{
		"":      group,
		"serve": {badUsage: []string{"--route", "nope"}, failure: []string{"--listen", busy, "--api-listen", freeAddr(t), "--route", "/a/=http://127.0.0.1:9", "--store", filepath.Join(dir, "s.db")}},
		"lease": group,
		"lease acquire": {badUsage: []string{"jobs", "--holder", "a", "--ttl", "1500us", "--api", down},
			failure: []string{"jobs", "--holder", "a", "--api", down}},
		"lease renew": {badUsage: []string{"jobs", "--holder", "a", "--api", down},
			failure: []string{"jobs", "--holder", "a", "--epoch", "1", "--api", down}},
		"lease release": {badUsage: []string{"jobs", "--holder", "", "--epoch", "1", "--api", down},
			failure: []string{"jobs", "--holder", "a", "--epoch", "1", "--api", down}},
		"lease get":             {badUsage: []string{"jobs", "more"}, failure: []string{"jobs", "--api", down}},
		"lease watch":           {badUsage: []string{"--api", down}, failure: []string{"jobs", "--api", down}},
		"token":                 group,
		"token inspect":         {badUsage: []string{}, failure: []string{"not-a-token"}},
		"probe":                 {badUsage: []string{"now"}, usageCode: exitFailure, failure: []string{"--api", down}},
		"keys":                  group,
		"keys generate":         {badUsage: []string{"--alg", "RS256"}, failure: []string{"--out", existing}},
		"keys api-key":          {badUsage: []string{"--name", "a\nb", "--admin"}, noFailure: "only if the system's random source fails"},
		"config":                group,
		"config validate":       {badUsage: []string{}, failure: []string{filepath.Join(dir, "missing.yaml")}},
		"config example":        {badUsage: []string{"extra"}, noFailure: "prints a constant"},
		"echo":                  {badUsage: []string{"extra"}, failure: []string{"--listen", busy}},
		"demo":                  {badUsage: []string{"now"}, noFailure: "fails only if the story does not go as told"},
		"version":               {badUsage: []string{"extra"}, noFailure: "prints the build's version"},
		"help":                  {badUsage: []string{"frob"}, noFailure: "prints help"},
		"completion":            group,
		"completion bash":       {badUsage: []string{"extra"}, noFailure: "prints a script"},
		"completion zsh":        {badUsage: []string{"extra"}, noFailure: "prints a script"},
		"completion fish":       {badUsage: []string{"extra"}, noFailure: "prints a script"},
		"completion powershell": {badUsage: []string{"extra"}, noFailure: "prints a script"},
	}
}

// commandPaths returns the path (after "fencegw") of every command the
// binary has, hidden ones aside.
func commandPaths() []string {
	root := newRootCmd(io.Discard)
	var paths []string
	var walk func(c *cobra.Command, path string)
	walk = func(c *cobra.Command, path string) {
		paths = append(paths, path)
		for _, s := range c.Commands() {
			if !s.Hidden {
				walk(s, strings.TrimSpace(path+" "+s.Name()))
			}
		}
	}
	walk(root, "")
	return paths
}

// TestExitCodes enforces the exit-code table on every command and
// subcommand.
func TestExitCodes(t *testing.T) {
	table := exitTable(t)
	paths := commandPaths()
	for _, p := range paths {
		if _, ok := table[p]; !ok {
			t.Errorf("fencegw %s: no row in the exit-code table", p)
		}
	}
	for p := range table {
		if !slices.Contains(paths, p) {
			t.Errorf("the exit-code table has a row for fencegw %s, which does not exist", p)
		}
	}
	for _, p := range paths {
		row := table[p]
		t.Run(strings.ReplaceAll("fencegw "+p, " ", "_"), func(t *testing.T) {
			path := strings.Fields(p)
			for _, args := range [][]string{append(slices.Clone(path), "--help"), append(slices.Clone(path), "-h"),
				append([]string{"help"}, path...)} {
				out, stderr, code := runCLI(t, args...)
				if code != exitOK || !strings.Contains(out, "Usage:") || stderr != "" {
					t.Errorf("fencegw %q: exit %d, stdout %q, stderr %q; want 0 and the usage on stdout", args, code, out, stderr)
				}
			}
			usage := exitUsage
			if row.usageCode != 0 {
				usage = row.usageCode
			}
			for _, args := range [][]string{append(slices.Clone(path), "--no-such-flag"), append(slices.Clone(path), row.badUsage...)} {
				out, stderr, code := runCLI(t, args...)
				last := stderr[strings.LastIndex(strings.TrimSuffix(stderr, "\n"), "\n")+1:]
				if code != usage || out != "" || !strings.HasPrefix(last, "fencegw") || !strings.Contains(last, "--help'") {
					t.Errorf("fencegw %q: exit %d, stdout %q, stderr %q; want %d and a line ending in a hint to --help", args, code, out, stderr, usage)
				}
			}
			if row.failure == nil {
				if row.noFailure == "" {
					t.Error("neither a runtime failure nor why there is none")
				}
				return
			}
			args := append(slices.Clone(path), row.failure...)
			if out, stderr, code := runCLI(t, args...); code != exitFailure || stderr == "" {
				t.Errorf("fencegw %q: exit %d, stdout %q, stderr %q; want 1", args, code, out, stderr)
			}
		})
	}
}

// TestUnknownSuggests: a typo in a command or flag is named with the
// closest one, on one line, with exit 2.
func TestUnknownSuggests(t *testing.T) {
	for args, want := range map[string]string{
		"srve":                           `unknown command "srve"; did you mean "serve"?`,
		"lease acqire jobs":              `unknown command "acqire"; did you mean "acquire"?`,
		"keys generat":                   `did you mean "generate"?`,
		"help leese":                     `did you mean "lease"?`,
		"lease acquire jobs --holdr a":   "unknown flag: --holdr; did you mean --holder?",
		"lease renew jobs --epoc 1":      "did you mean --epoch?",
		"config validate --hlp":          "did you mean --help?",
		"completion bsh":                 `did you mean "bash"?`,
		"token inspect x --audiense fgw": "did you mean --audience?",
	} {
		out, stderr, code := runCLI(t, strings.Fields(args)...)
		if code != exitUsage || out != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) {
			t.Errorf("fencegw %s: exit %d, stdout %q, stderr %q; want 2 and one line with %q", args, code, out, stderr, want)
		}
	}
}
