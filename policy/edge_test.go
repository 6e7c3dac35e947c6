package policy_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

func TestSubpathAtSegmentBoundary(t *testing.T) {
	cases := []struct {
		prefix, path, want string
		ok                 bool
	}{
		{"/tenants", "/tenants", "/", true},
		{"/tenants", "/tenants/42/pay", "/42/pay", true},
		{"/tenants", "/tenants/", "/", true},
		{"/tenants", "/tenants..", "", false},
		{"/tenants", "/tenants../base/42", "", false},
		{"/tenants", "/tenantsX", "", false},
		{"/email/", "/email/send", "/send", true},
		{"/email/", "/email/", "/", true},
		{"/email/", "/email", "", false},
		{"/", "/x/y", "/x/y", true},
	}
	for _, c := range cases {
		got, ok := policy.Subpath(c.path, c.prefix)
		if got != c.want || ok != c.ok {
			t.Errorf("Subpath(%q, %q) = %q, %v; want %q, %v", c.path, c.prefix, got, ok, c.want, c.ok)
		}
	}
}

func TestFencedMethodsDefaultToEveryWrite(t *testing.T) {
	r := route("", "/")
	r.Methods = nil
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE", "PURGE", "PROPFIND", "M-SEARCH", "TRACE"} {
		if !r.Fenced(m) {
			t.Errorf("%s not fenced by default", m)
		}
	}
	r.Methods = []string{"POST"}
	if r.Fenced("PUT") || !r.Fenced("POST") {
		t.Error("a route's own list is not what it fences")
	}
}

func TestCheckMethod(t *testing.T) {
	for _, ok := range []string{"POST", "M-SEARCH", "PURGE"} {
		if err := policy.CheckMethod(ok); err != nil {
			t.Errorf("CheckMethod(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"post", "Post", "pOST", "delete", ""} {
		if err := policy.CheckMethod(bad); !errors.Is(err, policy.ErrBadMethod) {
			t.Errorf("CheckMethod(%q) = %v, want ErrBadMethod", bad, err)
		}
	}
}

func TestCheckMethodOverride(t *testing.T) {
	req := func(method, target string, h ...string) *http.Request {
		r := httptest.NewRequest(method, target, nil)
		for i := 0; i < len(h); i += 2 {
			r.Header[h[i]] = append(r.Header[h[i]], h[i+1])
		}
		return r
	}
	for _, r := range []*http.Request{
		req("POST", "/x"), req("DELETE", "/x?method=card"), req("GET", "/x?x_method=1&methods=2"),
		req("POST", "/x", "X-Method", "DELETE"), req("GET", "/x?q=_method"),
	} {
		if err := policy.CheckMethodOverride(r); err != nil {
			t.Errorf("%s %s %v: %v", r.Method, r.URL, r.Header, err)
		}
	}
	for _, r := range []*http.Request{
		req("POST", "/x", "X-Http-Method-Override", "DELETE"),
		req("GET", "/x", "X-Http-Method-Override", "POST"),
		req("POST", "/x", "X-Http-Method", "PUT"),
		req("POST", "/x", "X-Method-Override", "PATCH"),
		req("POST", "/x", "X_HTTP_METHOD_OVERRIDE", "DELETE"),
		req("POST", "/x", "x_http_method", "DELETE"),
		req("POST", "/x", "X-Http-Method-Override", ""),
		req("POST", "/x?_method=DELETE"), req("GET", "/x?a=1;_METHOD=put"), req("POST", "/x?%5Fmethod=DELETE"),
		req("POST", "/x?.method=DELETE"), req("POST", "/x?_method[]=DELETE"),
		req("POST", "/x?_method"),
	} {
		err := policy.CheckMethodOverride(r)
		if !errors.Is(err, policy.ErrBadMethod) {
			t.Errorf("%s %s %v: %v, want ErrBadMethod", r.Method, r.URL, r.Header, err)
		}
	}
	for _, h := range []string{"X-HTTP-Method-Override", "x_http_method", "X-Method-Override"} {
		if _, err := tokens.ParseTemplate("{header:" + h + "}"); err == nil {
			t.Errorf("{header:%s} names a resource", h)
		}
	}
}

func TestCheckEscapedPath(t *testing.T) {
	for _, ok := range []string{"/a/b", "/a%41", "/100%25", "/a%20b", "/%3F"} {
		if err := policy.CheckEscapedPath(ok); err != nil {
			t.Errorf("CheckEscapedPath(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"/a%2Fb", "/a%2fb", "/%2E%2E/x", "/%2e", "/a%5Cb", "/a%5c", "/x%41%2F"} {
		if err := policy.CheckEscapedPath(bad); !errors.Is(err, policy.ErrUncleanPath) {
			t.Errorf("CheckEscapedPath(%q) = %v, want ErrUncleanPath", bad, err)
		}
	}
	if err := policy.CheckPath("/a\x00b"); !errors.Is(err, policy.ErrUncleanPath) {
		t.Errorf("a NUL in the path: %v", err)
	}
}

func TestResourceHeaderMustBeUnambiguous(t *testing.T) {
	tm, err := tokens.ParseTemplate("t-{header:X-Tenant}")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		header http.Header
		want   error
	}{
		{"one value", http.Header{"X-Tenant": {"7"}}, nil},
		{"underscore twin", http.Header{"X-Tenant": {"7"}, "X_tenant": {"8"}}, policy.ErrAmbiguousHeader},
		{"upper-case twin", http.Header{"X-Tenant": {"7"}, "X_TENANT": {"7"}}, policy.ErrAmbiguousHeader},
		{"in Connection", http.Header{"X-Tenant": {"7"}, "Connection": {"keep-alive, x-tenant"}}, policy.ErrAmbiguousHeader},
		{"underscore in Connection", http.Header{"X-Tenant": {"7"}, "Connection": {"X_Tenant"}}, policy.ErrAmbiguousHeader},
		{"a list", http.Header{"X-Tenant": {"7,8"}}, policy.ErrAmbiguousHeader},
		{"repeated", http.Header{"X-Tenant": {"7", "8"}}, policy.ErrUnresolved},
		{"only a twin", http.Header{"X_tenant": {"7"}}, policy.ErrUnresolved},
	}
	for _, c := range cases {
		req := httptest.NewRequest("POST", "/x", nil)
		req.Header = c.header
		got, err := policy.Render(tm, req, "/")
		if c.want == nil {
			if err != nil || got != "t-7" {
				t.Errorf("%s: %q, %v", c.name, got, err)
			}
			continue
		}
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %q, %v; want %v", c.name, got, err, c.want)
		}
	}
}

// TestTemplateRefusesHeadersTheProxyRewrites: every header the reverse
// proxy, the HTTP server, the transport or the gateway itself sets, deletes
// or rewrites cannot name a resource, in any spelling. (The gateway's
// TestReservedHeadersAreTheOnesTheProxyChanges finds them by experiment.)
func TestTemplateRefusesHeadersTheProxyRewrites(t *testing.T) {
	for _, h := range []string{
		// hop-by-hop (httputil.ReverseProxy removes them)
		"Connection", "keep-alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization", "TE", "Trailer",
		"Transfer-Encoding", "Upgrade",
		// consumed by the server, written anew by the transport
		"Host", "Content-Length", "Expect",
		// forwarding headers the proxy deletes and sets itself
		"Forwarded", "X-Forwarded-For", "x-forwarded-host", "X_Forwarded_Proto",
		// trace context the gateway's transport injects
		"traceparent", "Tracestate", "Baggage",
		// fencing headers the gateway sets itself
		"Fencing-Token", "fencing_epoch", "Fencing-Resource", "FENCING_RESOURCE",
		// unfenced routing headers the gateway strips
		"X-Original-URL", "x_rewrite_url", "X-Real-Ip", "X-Forwarded-Port", "X-Forwarded-Prefix",
		"X-Forwarded-Server", "True-Client-IP", "X-Original-Method",
	} {
		_, err := tokens.ParseTemplate("x-{header:" + h + "}")
		if err == nil || !strings.Contains(err.Error(), "cannot name a resource") {
			t.Errorf("{header:%s}: %v", h, err)
		}
		if tokens.ReservedHeader(h) == "" {
			t.Errorf("ReservedHeader(%q) is empty", h)
		}
	}
	for _, h := range []string{"X-Tenant", "X-Forwarded-Tenant", "User-Agent", "Authorization"} {
		if _, err := tokens.ParseTemplate("x-{header:" + h + "}"); err != nil {
			t.Errorf("{header:%s}: %v", h, err)
		}
	}
}

func FuzzSubpath(f *testing.F) {
	for _, s := range [][2]string{{"/tenants/42", "/tenants"}, {"/email/x", "/email/"}, {"/tenants..", "/tenants"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, path, prefix string) {
		if prefix == "" || prefix[0] != '/' {
			return
		}
		sub, ok := policy.Subpath(path, prefix)
		if !ok {
			return
		}
		if path == strings.TrimSuffix(prefix, "/") && sub == "/" {
			return // the prefix itself
		}
		// The subpath is the path's tail, starting with "/", and what lies
		// before it is exactly the prefix, up to its boundary.
		if sub == "" || sub[0] != '/' || !strings.HasSuffix(path, sub) {
			t.Fatalf("Subpath(%q, %q) = %q", path, prefix, sub)
		}
		head := strings.TrimSuffix(path, sub)
		if head != strings.TrimSuffix(prefix, "/") {
			t.Fatalf("Subpath(%q, %q) = %q: %q is not the prefix at a boundary", path, prefix, sub, head)
		}
	})
}
