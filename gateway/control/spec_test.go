package control_test

import (
	"net/http"
	"slices"
	"sort"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/fencegw/fencegw/gateway/control"
	"github.com/fencegw/fencegw/internal/testutil/testspec"
)

// TestControlAPIMatchesSpec compares the control API's routes with
// openapi.yaml's paths and methods, both ways.
func TestControlAPIMatchesSpec(t *testing.T) {
	doc, err := testspec.Load()
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	h := control.NewRouter(control.Options{Metrics: http.NotFoundHandler(), Pprof: true})
	err = chi.Walk(h, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		served = append(served, method+" "+route)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(served)
	inSpec := testspec.ControlOperations(doc)
	for _, op := range inSpec {
		if !slices.Contains(served, op) {
			t.Errorf("the spec has %s; the control API does not serve it", op)
		}
	}
	for _, op := range served {
		if !slices.Contains(inSpec, op) {
			t.Errorf("the control API serves %s; the spec does not have it", op)
		}
	}
	if len(inSpec) == 0 || len(served) == 0 {
		t.Fatalf("nothing to compare: spec %v, router %v", inSpec, served)
	}
}
