package gateway_test

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/gateway/control"
	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/fencegw/fencegw/wire"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"
)

// specOperations lists "METHOD path" for every operation of the spec's
// control API (every path but /{proxied}).
func specOperations(doc *openapi3.T) []string {
	var ops []string
	for path, item := range doc.Paths.Map() {
		if path == proxiedPath {
			continue
		}
		for method := range item.Operations() {
			ops = append(ops, method+" "+path)
		}
	}
	sort.Strings(ops)
	return ops
}

// TestControlAPIMatchesSpec compares the control API's routes with
// openapi.yaml's paths and methods, both ways.
func TestControlAPIMatchesSpec(t *testing.T) {
	doc, err := loadSpec()
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
	inSpec := specOperations(doc)
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

// TestProxyPathItem checks the path item standing for the proxy: on its own
// server, every method OpenAPI can name, the same answers for each.
func TestProxyPathItem(t *testing.T) {
	doc, err := loadSpec()
	if err != nil {
		t.Fatal(err)
	}
	item := doc.Paths.Value(proxiedPath)
	if item == nil {
		t.Fatalf("no %s path item", proxiedPath)
	}
	if len(item.Servers) != 1 || len(doc.Servers) != 1 || item.Servers[0].URL == doc.Servers[0].URL {
		t.Fatalf("%s must have its own server (the proxy listener), not the control API's", proxiedPath)
	}
	want := []string{"default", "400", "401", "403", "404", "409", "412", "413", "422", "428", "431", "501", "502", "503", "504"}
	sort.Strings(want)
	for _, m := range []string{"GET", "HEAD", "OPTIONS", "TRACE", "POST", "PUT", "PATCH", "DELETE"} {
		op := item.GetOperation(m)
		if op == nil {
			t.Errorf("%s %s: no operation", m, proxiedPath)
			continue
		}
		got := op.Responses.Keys()
		sort.Strings(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s %s answers %v, want %v", m, proxiedPath, got, want)
		}
		for _, code := range got {
			if code == "default" {
				continue
			}
			r := op.Responses.Value(code).Value
			if r.Content.Get(wire.ProblemContentType) == nil || len(r.Content) != 1 {
				t.Errorf("%s %s %s: the proxy's own answers are problem documents only", m, proxiedPath, code)
			}
		}
		if op.Responses.Status(http.StatusServiceUnavailable).Value.Headers["Retry-After"] == nil {
			t.Errorf("%s %s 503: no Retry-After", m, proxiedPath)
		}
	}
}

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
	doc, err := loadSpec()
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

// jsonFields returns the JSON names of a struct's fields, and those always
// sent (no omitempty).
func jsonFields(typ reflect.Type) (all, always []string) {
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		all = append(all, name)
		if !strings.Contains(opts, "omitempty") {
			always = append(always, name)
		}
	}
	sort.Strings(all)
	sort.Strings(always)
	return all, always
}

// TestBodiesMatchSpec: the schemas of the bodies the gateway sends name the
// same members as the Go types it encodes, and require those always sent.
func TestBodiesMatchSpec(t *testing.T) {
	doc, err := loadSpec()
	if err != nil {
		t.Fatal(err)
	}
	for schema, v := range map[string]any{
		"Problem":      wire.Problem{},
		"Lease":        wire.LeaseState{},
		"Fence":        wire.FenceState{},
		"Rejection":    wire.Rejection{},
		"Rejections":   wire.Rejections{},
		"LeaseRecord":  wire.LeaseRecord{},
		"LeaseHistory": wire.LeaseHistory{},
	} {
		s := doc.Components.Schemas[schema]
		if s == nil {
			t.Errorf("no schema %s", schema)
			continue
		}
		all, always := jsonFields(reflect.TypeOf(v))
		props := make([]string, 0, len(s.Value.Properties))
		for name := range s.Value.Properties {
			props = append(props, name)
		}
		sort.Strings(props)
		required := slices.Clone(s.Value.Required)
		sort.Strings(required)
		if !slices.Equal(all, props) {
			t.Errorf("%T sends %v; schema %s has %v", v, all, schema, props)
		}
		if !slices.Equal(always, required) {
			t.Errorf("%T always sends %v; schema %s requires %v", v, always, schema, required)
		}
		for _, name := range epochFields(reflect.TypeOf(v)) {
			if p := s.Value.Properties[name]; p == nil || p.Ref != "#/components/schemas/Epoch" {
				t.Errorf("%T sends %s as a wire.Epoch (a decimal string); schema %s does not say $ref Epoch", v, name, schema)
			}
		}
	}
	epoch := doc.Components.Schemas["Epoch"]
	if epoch == nil || !epoch.Value.Type.Is("string") || epoch.Value.Format != "uint64" {
		t.Errorf("schema Epoch is not type: string, format: uint64")
	}
}

// epochFields returns the JSON names of a struct's wire.Epoch fields.
func epochFields(typ reflect.Type) []string {
	var names []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft == reflect.TypeFor[wire.Epoch]() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			names = append(names, name)
		}
	}
	return names
}
