package archtest

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Size limits that keep every package, file and function readable at once.
const (
	maxPackageLines  = 3000 // non-test Go lines of one package
	maxFileLines     = 600  // lines of one non-test source file
	maxFunctionLines = 80   // lines of one function, from its signature to its closing brace
)

// sourceExts are the source files the file limit applies to.
var sourceExts = []string{".go", ".js", ".css", ".html", ".sh"}

// TestSizes checks the size limits over the module's non-test sources:
// every package's Go files together, every source file, every function
// and function literal. Test files and testdata are left out.
func TestSizes(t *testing.T) {
	root, _ := moduleRoot(t)
	pkgLines := map[string]int{}
	var over []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if name := d.Name(); rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !isSource(rel) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n := bytes.Count(src, []byte("\n"))
		if n > maxFileLines {
			over = append(over, fmt.Sprintf("file %s: %d lines (at most %d)", rel, n, maxFileLines))
		}
		if strings.HasSuffix(rel, ".go") {
			pkgLines[filepath.Dir(rel)] += n
			over = append(over, longFunctions(t, rel, src)...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir, n := range pkgLines {
		if n > maxPackageLines {
			over = append(over, fmt.Sprintf("package %s: %d non-test lines (at most %d)", filepath.ToSlash(dir), n, maxPackageLines))
		}
	}
	sort.Strings(over)
	for _, o := range over {
		t.Error(o)
	}
}

// isSource reports whether rel is a non-test source file the limits cover.
func isSource(rel string) bool {
	if strings.HasSuffix(rel, "_test.go") {
		return false
	}
	for _, ext := range sourceExts {
		if strings.HasSuffix(rel, ext) {
			return true
		}
	}
	return false
}

// longFunctions lists the functions of the Go file rel longer than
// maxFunctionLines.
func longFunctions(t *testing.T, rel string, src []byte) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
	if err != nil {
		t.Errorf("parse %s: %v", rel, err)
		return nil
	}
	var over []string
	ast.Inspect(f, func(n ast.Node) bool {
		name := ""
		switch x := n.(type) {
		case *ast.FuncDecl:
			name = x.Name.Name
		case *ast.FuncLit:
			name = "a function literal"
		default:
			return true
		}
		from, to := fset.Position(n.Pos()).Line, fset.Position(n.End()).Line
		if lines := to - from + 1; lines > maxFunctionLines {
			over = append(over, fmt.Sprintf("function %s at %s:%d: %d lines (at most %d)", name, rel, from, lines, maxFunctionLines))
		}
		return true
	})
	return over
}

// TestArchitectureNamesEveryPackage: ARCHITECTURE.md names every package
// of the module, as `path` relative to the module (the module itself as
// its last element), so the map of the house stays whole.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	root, module := moduleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range listPackages(t, root) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if !bytes.Contains(doc, []byte("`"+rel+"`")) {
			t.Errorf("ARCHITECTURE.md does not name package `%s`", rel)
		}
	}
}
