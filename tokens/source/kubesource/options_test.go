package kubesource

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestOptions: defaults, and each field that cannot be used is named.
func TestOptions(t *testing.T) {
	d := Options{}.WithDefaults()
	if d.Namespace != "default" || d.Lease != "{resource}" || d.SkewMargin != time.Second {
		t.Fatalf("defaults = %+v", d)
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("Validate(defaults) = %v", err)
	}
	if got := (Options{Lease: "tenant-{resource}-leader"}).LeaseFor("42"); got != "tenant-42-leader" {
		t.Fatalf("LeaseFor = %q", got)
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Namespace: "Kube_System"}, "Namespace"},
		{Options{Namespace: "a.b"}, "Namespace"},
		{Options{Lease: "Upper"}, "Lease"},
		{Options{Lease: "-x"}, "Lease"},
		{Options{Lease: "a/{resource}"}, "Lease"},
		{Options{Lease: "{segment:1}"}, "only placeholder"},
		{Options{Lease: strings.Repeat("a", 254)}, "Lease"},
		{Options{SkewMargin: -time.Second}, "SkewMargin"},
	} {
		err := tc.o.WithDefaults().Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want it to mention %q", tc.o, err, tc.want)
		}
	}
}

// FuzzCheckLeaseTemplate: a template is accepted only if every resource
// made of lower-case letters and digits gives a name CheckLeaseName
// accepts, and every error wraps ErrInvalidLeaseName.
func FuzzCheckLeaseTemplate(f *testing.F) {
	for _, s := range []string{"{resource}", "tenant-{resource}", "a.b", "", "{}", "A", "a..b", "x{resource}{resource}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tmpl string) {
		err := CheckLeaseTemplate(tmpl)
		if err != nil {
			if !errors.Is(err, ErrInvalidLeaseName) {
				t.Fatalf("CheckLeaseTemplate(%q) = %v, not ErrInvalidLeaseName", tmpl, err)
			}
			return
		}
		name := Options{Lease: tmpl}.LeaseFor("x")
		if err := CheckLeaseName(name); err != nil {
			t.Fatalf("CheckLeaseTemplate(%q) accepted, but %q: %v", tmpl, name, err)
		}
	})
}
