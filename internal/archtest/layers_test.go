// Package archtest checks fencegw's package layering: the packages form
// layers, each importing only from below, and the test helpers are imported
// only by tests. It has no code of its own; the check is its test.
package archtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A unit is a group of packages that may import each other freely (Go
// forbids the cycles). Paths are relative to the module; "x" names the
// package x, "x/..." names x and every package below it, and "x/*" names
// every package below x but not x itself.
type unit struct {
	name string
	pkgs []string
	// only, when set, lists the packages of fencegw (same patterns) the unit
	// may import besides its own, even among the layers below it.
	only []string
}

// A layer is a set of units. A package may import its own unit and any
// unit of a lower layer; importing another unit of its own layer
// (sideways) or a unit of a higher layer (up) is refused.
type layer struct {
	name  string
	units []unit
}

// layers is fencegw's layering, bottom to top. Every package of the module
// belongs to exactly one unit, or is a test helper (testHelpers); a new
// package fails this test until it is placed. A unit naming a package that
// does not exist (yet) is not an error.
var layers = []layer{
	// The JSON types of the HTTP contract: shared by the gateway and its
	// clients, importing nothing of fencegw.
	{"wire", []unit{
		{name: "wire", pkgs: []string{"wire/..."}},
		// Leaf helpers that import nothing of fencegw.
		{name: "internal/suggest", pkgs: []string{"internal/suggest"}, only: []string{}},
	}},
	// The domain, its stores and epoch sources, their contract suites and
	// their plumbing (tokens/internal/...).
	{"tokens", []unit{
		{name: "tokens", pkgs: []string{"tokens/..."}},
	}},
	// Routes, configuration, telemetry and the leader client, side by side.
	// The leader client is what leaders link: it stays clear of the
	// gateway's domain and imports only the contract's types.
	{"policy, config, telemetry, leader", []unit{
		{name: "policy", pkgs: []string{"policy"}},
		{name: "config", pkgs: []string{"config"}},
		{name: "telemetry", pkgs: []string{"telemetry"}},
		{name: "leader", pkgs: []string{"leader"}, only: []string{"wire/..."}},
	}},
	// The parts of the gateway (gateway/upstream, gateway/guard,
	// gateway/audit, gateway/control, gateway/ui, gateway/idempotency, ...)
	// sit below the package gateway, which assembles them: a part may import
	// the other parts (for now one unit; a split may order them into layers
	// of their own) but never gateway itself. What the parts share moves
	// into a part (or into wire), not into gateway.
	{"gateway parts", []unit{
		{name: "gateway/*", pkgs: []string{"gateway/*"}},
	}},
	{"gateway", []unit{
		{name: "gateway", pkgs: []string{"gateway"}},
	}},
	// The composition root.
	{"server", []unit{
		{name: "server", pkgs: []string{"server"}},
	}},
	// The binary, its demo and its API client.
	{"cmd", []unit{
		{name: "cmd/fencegw", pkgs: []string{"cmd/fencegw", "cmd/fencegw/internal/..."}},
	}},
	// Test suites and tooling, which may drive any of the above.
	{"tooling", []unit{
		{name: "faults", pkgs: []string{"faults"}},
		{name: "bench", pkgs: []string{"bench/..."}},
		{name: "archtest", pkgs: []string{"internal/archtest"}},
		// Examples are main packages users read and copy: they take only
		// the contract's types, and nothing imports them.
		{name: "examples", pkgs: []string{"examples/..."}, only: []string{"wire/..."}},
	}},
}

// testHelpers are packages that only tests import: from _test.go files, or
// from another test helper. They belong to no layer.
var testHelpers = []string{"internal/testutil/*"}

// testSuites are packages of a layer that, like the test helpers, only
// tests import: the contract suites.
var testSuites = []string{"tokens/storetest", "tokens/source/sourcetest"}

// nothingUnder lists the trees no package below internalRoot imports,
// test files included.
var (
	internalRoot = "internal/*"
	nothingUnder = []string{"gateway/...", "server/...", "cmd/..."}
)

// pkg is what go list tells of a package.
type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// TestLayers checks every import edge between fencegw's packages. The
// imports of a package's code and of its in-package tests (which compile
// into it) go down the layers or stay in their unit. Its external tests
// (package x_test) stand above every layer, as its users do, and may import
// any package. Test helpers and suites are imported only from _test.go
// files, and nothing under internal/ imports gateway, server or cmd, from
// its code or its tests.
func TestLayers(t *testing.T) {
	root, module := moduleRoot(t)
	pkgs := listPackages(t, root)
	rel := func(path string) (string, bool) {
		if path == module {
			return ".", true
		}
		r, ok := strings.CutPrefix(path, module+"/")
		return r, ok
	}

	// Where each package belongs.
	type place struct {
		layer int // -1 for a test helper
		unit  *unit
	}
	where := map[string]place{}
	for _, p := range pkgs {
		r, _ := rel(p.ImportPath)
		var found []place
		for li := range layers {
			for ui := range layers[li].units {
				u := &layers[li].units[ui]
				if matchAny(u.pkgs, r) {
					found = append(found, place{li, u})
				}
			}
		}
		if matchAny(testHelpers, r) {
			found = append(found, place{-1, nil})
		}
		switch len(found) {
		case 0:
			t.Errorf("%s belongs to no layer: place it in layers (or testHelpers) in internal/archtest", r)
		case 1:
			where[r] = found[0]
		default:
			var names []string
			for _, f := range found {
				names = append(names, describe(f.layer, f.unit))
			}
			t.Errorf("%s belongs to more than one place: %s", r, strings.Join(names, ", "))
		}
	}

	edges := 0
	testOnly := func(r string) bool {
		return matchAny(testHelpers, r) || matchAny(testSuites, r)
	}
	for _, p := range pkgs {
		from, _ := rel(p.ImportPath)
		fp, placed := where[from]
		if !placed {
			continue // told above
		}
		for _, e := range []struct {
			imports   []string
			kind      string
			fromTests bool
			external  bool
		}{
			{p.Imports, "", false, false},
			{p.TestImports, " (in its tests)", true, false},
			{p.XTestImports, " (in its external tests)", true, true},
		} {
			for _, imp := range e.imports {
				to, ok := rel(imp)
				if !ok || to == from {
					continue
				}
				tp, placed := where[to]
				if !placed {
					continue // told above
				}
				edges++
				edge := fmt.Sprintf("%s imports %s%s", from, to, e.kind)

				// Nothing under internal/ imports gateway, server or cmd.
				if matchAny([]string{internalRoot}, from) && matchAny(nothingUnder, to) {
					t.Errorf("%s: nothing under internal/ imports gateway, server or cmd", edge)
				}
				// Test helpers and suites: imported only from tests.
				if testOnly(to) && !e.fromTests && !testOnly(from) {
					t.Errorf("%s: %s is for tests only; import it from _test.go files", edge, to)
				}
				// External test packages stand above every layer, as the
				// package's users do; a test helper is in no layer.
				if e.external || fp.layer < 0 || tp.layer < 0 {
					continue
				}
				switch {
				case fp.unit == tp.unit:
				case tp.layer > fp.layer:
					t.Errorf("%s: an edge up, from %s to %s", edge, describe(fp.layer, fp.unit), describe(tp.layer, tp.unit))
				case tp.layer == fp.layer:
					t.Errorf("%s: an edge sideways within layer %d (%s), from unit %s to unit %s",
						edge, fp.layer, layers[fp.layer].name, fp.unit.name, tp.unit.name)
				case fp.unit.only != nil && !matchAny(fp.unit.only, to):
					t.Errorf("%s: %s may import of fencegw only %s", edge, describe(fp.layer, fp.unit), strings.Join(fp.unit.only, ", "))
				}
			}
		}
	}
	t.Logf("%d packages; %d import edges between them checked", len(pkgs), edges)
}

// TestPatterns checks the matching the layers are declared with.
func TestPatterns(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{"gateway", "gateway", true},
		{"gateway", "gateway/ui", false},
		{"gateway", "gatewayx", false},
		{"gateway/*", "gateway", false},
		{"gateway/*", "gateway/ui", true},
		{"gateway/*", "gateway/ui/assets", true},
		{"gateway/*", "gatewayx/ui", false},
		{"tokens/...", "tokens", true},
		{"tokens/...", "tokens/internal/coalesce", true},
		{"tokens/...", "tokensx", false},
	} {
		if got := match(c.pattern, c.path); got != c.want {
			t.Errorf("match(%q, %q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
}

func describe(layer int, u *unit) string {
	if layer < 0 {
		return "the test helpers"
	}
	return fmt.Sprintf("unit %s of layer %d (%s)", u.name, layer, layers[layer].name)
}

func matchAny(patterns []string, path string) bool {
	for _, p := range patterns {
		if match(p, path) {
			return true
		}
	}
	return false
}

// match reports whether path is named by pattern: "x" exactly, "x/..." x
// and below, "x/*" only below.
func match(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	if base, ok := strings.CutSuffix(pattern, "/*"); ok {
		return strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

// moduleRoot finds the directory holding go.mod, walking up from the
// test's directory, and the module path it declares.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			sc := bufio.NewScanner(bytes.NewReader(data))
			for sc.Scan() {
				if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
					return dir, strings.Trim(strings.TrimSpace(m), `"`)
				}
			}
			t.Fatalf("%s declares no module", filepath.Join(dir, "go.mod"))
		}
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// listPackages runs go list over the module.
func listPackages(t *testing.T, root string) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps=false", "-json=ImportPath,Imports,TestImports,XTestImports", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list listed no packages")
	}
	return pkgs
}
