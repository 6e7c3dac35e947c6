package gateway_test

import (
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"go.yaml.in/yaml/v3"

	"github.com/fencegw/fencegw/gateway"
)

// TestControlAPIMatchesSpec compares the control API's routes with
// openapi.yaml's paths, both ways.
func TestControlAPIMatchesSpec(t *testing.T) {
	data, err := os.ReadFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		OpenAPI string                    `yaml:"openapi"`
		Paths   map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(data, &spec); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	if !strings.HasPrefix(spec.OpenAPI, "3.1") {
		t.Fatalf("openapi = %q, want 3.1.x", spec.OpenAPI)
	}
	var inSpec []string
	for path, ops := range spec.Paths {
		for method := range ops {
			inSpec = append(inSpec, strings.ToUpper(method)+" "+path)
		}
	}
	var served []string
	h := gateway.NewControlRouter(gateway.ControlOptions{Metrics: http.NotFoundHandler()})
	err = chi.Walk(h, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		served = append(served, method+" "+route)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(inSpec)
	sort.Strings(served)
	if strings.Join(inSpec, "\n") != strings.Join(served, "\n") {
		t.Fatalf("spec and router differ\nspec:\n  %s\nrouter:\n  %s", strings.Join(inSpec, "\n  "), strings.Join(served, "\n  "))
	}
}
