package gateway_test

import (
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/wire"
)

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
