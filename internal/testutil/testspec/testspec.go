// Package testspec loads openapi.yaml, the gateway's HTTP contract, for the
// tests that check code and traffic against it. Only tests import it.
package testspec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/getkin/kin-openapi/openapi3"
)

// ProxiedPath is the path item that stands for every path of the proxy.
const ProxiedPath = "/{proxied}"

// Path is the path of the module's openapi.yaml, found from the working
// directory (a package's, under go test) up to the directory of go.mod.
func Path() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("testspec: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "openapi.yaml"), nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("testspec: no go.mod above the working directory")
		}
		dir = up
	}
}

// Load loads and validates openapi.yaml. kin-openapi reads the document's
// openapi field and validates a 3.1 document as 3.1 (JSON Schema 2020-12),
// without options; Load refuses any other version.
func Load() (*openapi3.T, error) {
	path, err := Path()
	if err != nil {
		return nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	if !doc.IsOpenAPI31OrLater() || doc.IsOpenAPI32OrLater() {
		return nil, fmt.Errorf("%s: openapi %q, want 3.1.x", path, doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("validate %s: %w", path, err)
	}
	return doc, nil
}

// ControlOperations lists "METHOD path", sorted, for every operation of
// the spec's control API (every path but ProxiedPath).
func ControlOperations(doc *openapi3.T) []string {
	var ops []string
	for path, item := range doc.Paths.Map() {
		if path == ProxiedPath {
			continue
		}
		for method := range item.Operations() {
			ops = append(ops, method+" "+path)
		}
	}
	sort.Strings(ops)
	return ops
}
