package problem_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/gateway/problem"
	"github.com/fencegw/fencegw/internal/testutil/testspec"
)

// problemTypes returns the catalogue's problem types, by type, each with
// its status.
func problemTypes(t *testing.T) map[string]int {
	t.Helper()
	types := map[string]int{}
	for _, k := range problem.Kinds() {
		if _, dup := types[k.Type]; dup {
			t.Errorf("the catalogue lists %s twice", k.Type)
		}
		types[k.Type] = k.Status
	}
	return types
}

// TestProblemTypesMatchSpec: the Problem schema lists exactly the problem
// types of the catalogue, and each has one schema fixing its type and the
// catalogue's status.
func TestProblemTypesMatchSpec(t *testing.T) {
	doc, err := testspec.Load()
	if err != nil {
		t.Fatal(err)
	}
	code := problemTypes(t)
	var inSpec []string
	for _, v := range doc.Components.Schemas["Problem"].Value.Properties["type"].Value.Enum {
		inSpec = append(inSpec, v.(string))
	}
	for v := range code {
		if !slices.Contains(inSpec, v) {
			t.Errorf("the catalogue's %s is not in the spec's Problem.type", v)
		}
	}
	for _, v := range inSpec {
		if _, ok := code[v]; !ok {
			t.Errorf("the spec's Problem.type %s is not in the catalogue", v)
		}
	}
	// One *Problem schema per type, fixing its type and status.
	schemaOf := map[string][]string{}
	for name, s := range doc.Components.Schemas {
		if !strings.HasSuffix(name, "Problem") || name == "Problem" {
			continue
		}
		var typ, status any
		for _, part := range s.Value.AllOf {
			if p := part.Value.Properties["type"]; p != nil && p.Value.Const != nil {
				typ = p.Value.Const
			}
			if p := part.Value.Properties["status"]; p != nil && p.Value.Const != nil {
				status = p.Value.Const
			}
		}
		if typ == nil || status == nil {
			t.Errorf("schema %s does not fix type and status", name)
			continue
		}
		schemaOf[typ.(string)] = append(schemaOf[typ.(string)], name)
		if want, ok := code[typ.(string)]; ok && fmt.Sprint(status) != fmt.Sprint(want) {
			t.Errorf("schema %s fixes status %v for %s, the catalogue says %d", name, status, typ, want)
		}
	}
	for v := range code {
		if len(schemaOf[v]) != 1 {
			t.Errorf("problem type %s has schemas %v, want one", v, schemaOf[v])
		}
	}
}
