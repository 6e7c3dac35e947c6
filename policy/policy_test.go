package policy_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

func TestParseTemplateErrors(t *testing.T) {
	bad := map[string]string{
		"":                  "empty",
		"a{":                "unclosed",
		"a}":                "unmatched",
		"{segment}":         "want {segment:N}",
		"{segment:0}":       "1 to 64",
		"{segment:x}":       "1 to 64",
		"{header:}":         "want",
		"{header:a b}":      "not a valid header name",
		"{cookie:x}":        "unknown placeholder",
		"t-{segment:1}-{":   "unclosed",
		"{segment:1}{host}": "want",
	}
	for src, want := range bad {
		_, err := tokens.ParseTemplate(src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTemplate(%q) = %v, want error containing %q", src, err, want)
		}
	}
}

func TestTemplateRender(t *testing.T) {
	cases := []struct {
		tmpl, prefix, path string
		header             http.Header
		want               string
		unresolved         bool
	}{
		{"invoice-sweeper", "/email/", "/email/send", nil, "invoice-sweeper", false},
		{"tenant-{segment:1}", "/tenants/", "/tenants/42/mail", nil, "tenant-42", false},
		{"{segment:2}", "/t/", "/t/a/b/c", nil, "b", false},
		{"{segment:2}", "/t/", "/t/a", nil, "", true},
		{"{segment:1}", "/t/", "/t/", nil, "", true},
		{"email:{header:X-Tenant}", "/", "/x", http.Header{"X-Tenant": {"7"}}, "email:7", false},
		{"email:{header:x-tenant}", "/", "/x", http.Header{"X-Tenant": {"7"}}, "email:7", false},
		{"{header:X-Tenant}", "/", "/x", nil, "", true},
		{"{header:X-Tenant}", "/", "/x", http.Header{"X-Tenant": {"1", "2"}}, "", true},
	}
	for _, c := range cases {
		tm, err := tokens.ParseTemplate(c.tmpl)
		if err != nil {
			t.Fatalf("ParseTemplate(%q): %v", c.tmpl, err)
		}
		req := httptest.NewRequest("POST", c.path, nil)
		for k, v := range c.header {
			req.Header[k] = v
		}
		got, err := policy.Render(tm, req, c.prefix)
		if c.unresolved {
			if !errors.Is(err, policy.ErrUnresolved) {
				t.Errorf("%q on %s = %q, %v; want ErrUnresolved", c.tmpl, c.path, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q on %s = %q, %v; want %q", c.tmpl, c.path, got, err, c.want)
		}
	}
}

func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{"a", "{segment:1}", "x-{header:X-T}-{segment:3}", "{", "}", "{a:b}"} {
		f.Add(s, "/p/a/b/c")
	}
	f.Fuzz(func(t *testing.T, src, path string) {
		tm, err := tokens.ParseTemplate(src)
		if err != nil {
			return
		}
		if tm.String() != src {
			t.Fatalf("String() = %q, want %q", tm.String(), src)
		}
		u, err := url.Parse(path)
		if err != nil {
			return
		}
		req := &http.Request{URL: u, Header: http.Header{"X-T": {"v"}}}
		out, err := policy.Render(tm, req, "/p/")
		if err == nil && strings.ContainsAny(out, "{}") && !strings.ContainsAny(path, "{}") && !strings.ContainsAny(src, "{}") {
			t.Fatalf("render produced braces from nowhere: %q", out)
		}
	})
}

func route(host, prefix string) *policy.Route {
	u, _ := url.Parse("http://127.0.0.1:9")
	return &policy.Route{Host: host, Prefix: prefix, Upstream: u, Verifier: tokens.RawVerifier{}}
}

func TestTableMatch(t *testing.T) {
	tbl, err := policy.NewTable([]*policy.Route{
		route("", "/"),
		route("", "/email/"),
		route("", "/email/bulk/"),
		route("api.example.com", "/email/"),
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ host, path, wantHost, wantPrefix string }{
		{"gw", "/email/send", "", "/email/"},
		{"gw", "/email/bulk/x", "", "/email/bulk/"},
		{"gw", "/email", "", "/"},
		{"API.example.com:8080", "/email/send", "api.example.com", "/email/"},
		{"api.example.com.", "/email/send", "api.example.com", "/email/"},
		{"api.example.com", "/other", "", "/"},
	}
	for _, c := range cases {
		req := httptest.NewRequest("GET", c.path, nil)
		req.Host = c.host
		r := tbl.Match(req)
		if r == nil || r.Host != c.wantHost || r.Prefix != c.wantPrefix {
			t.Errorf("Match(%s%s) = %+v, want host %q prefix %q", c.host, c.path, r, c.wantHost, c.wantPrefix)
		}
	}
	only, _ := policy.NewTable([]*policy.Route{route("", "/email/")})
	if r := only.Match(httptest.NewRequest("GET", "/x", nil)); r != nil {
		t.Errorf("Match(/x) = %+v, want nil", r)
	}
	if _, err := policy.NewTable([]*policy.Route{route("", "/a/"), route("", "/a/")}); err == nil {
		t.Error("duplicate routes accepted")
	}
}

func TestFencedMethods(t *testing.T) {
	r := route("", "/")
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		if !r.Fenced(m) {
			t.Errorf("%s not fenced by default", m)
		}
	}
	for _, m := range []string{"GET", "HEAD", "OPTIONS"} {
		if r.Fenced(m) {
			t.Errorf("%s fenced by default", m)
		}
	}
}

func TestResolveResourceFromHeader(t *testing.T) {
	r := route("", "/")
	req := httptest.NewRequest("POST", "/x", nil)
	if _, err := r.ResolveResource(req); !errors.Is(err, policy.ErrUnresolved) {
		t.Fatalf("no header: %v", err)
	}
	req.Header.Set("Fencing-Resource", "bad\nname")
	if _, err := r.ResolveResource(req); !errors.Is(err, tokens.ErrInvalidResource) {
		t.Fatalf("bad header: %v", err)
	}
	req.Header.Set("Fencing-Resource", "jobs")
	if got, err := r.ResolveResource(req); err != nil || got != "jobs" {
		t.Fatalf("= %q, %v", got, err)
	}
}

func TestCheckPath(t *testing.T) {
	for _, ok := range []string{"/", "/a", "/a/b/", "/a.b/c..d", "/.well-known/x"} {
		if err := policy.CheckPath(ok); err != nil {
			t.Errorf("CheckPath(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a", "/..", "/a/../b", "/a/./b", "/a//b", "//a", "/a/..", "/pub/..;/email", "/email;x/send", "/pub\\..\\email"} {
		if err := policy.CheckPath(bad); !errors.Is(err, policy.ErrUncleanPath) {
			t.Errorf("CheckPath(%q) = %v, want ErrUncleanPath", bad, err)
		}
	}
}

func FuzzCheckPath(f *testing.F) {
	for _, s := range []string{"/a/b", "/a/../b", "//", "/."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if policy.CheckPath(p) != nil {
			return
		}
		// A clean path is its own resolution: resolving it against any base
		// stays under it.
		u := &url.URL{Path: p}
		if got := (&url.URL{Path: "/"}).ResolveReference(u).Path; got != p && !strings.HasSuffix(p, "/") && got+"/" != p {
			t.Fatalf("clean path %q resolves to %q", p, got)
		}
	})
}
