package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fencegw/fencegw/wire"
)

// TestEdgeRequestsThroughTheBinary: each way the issue found for a write
// to reach the upstream as something other than what the fence checked is
// refused by the built binary, and nothing refused reaches the upstream.
func TestEdgeRequestsThroughTheBinary(t *testing.T) {
	up := newRecorder(t, http.StatusCreated)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "gw.yaml", []byte(fmt.Sprintf(`store: %q
routes:
  - {prefix: "/tenants", upstream: "%s/base", strip_prefix: true, tokens: raw, resource: "tenant-{segment:1}"}
  - {prefix: "/docs/", upstream: %q, tokens: raw, resource: "doc-{segment:1}"}
  - {prefix: "/hdr/", upstream: %q, tokens: raw, resource: "t-{header:X-Tenant}"}
  - {prefix: "/m/", upstream: %q, tokens: raw, resource: "m", methods: [POST]}
  - {prefix: "/d/", upstream: %q, tokens: raw, resource: "d", methods: [DELETE]}
  - {prefix: "/", upstream: %q, tokens: raw}
`, filepath.Join(dir, "s.db"), up.srv.URL, up.srv.URL, up.srv.URL, up.srv.URL, up.srv.URL, up.srv.URL)))
	p := start(t, "--config", cfg)

	// Raise the fences the attacks would get around.
	for _, raw := range []string{
		rawPost("POST", "/tenants/42/pay", "Fencing-Token: 5"),
		rawPost("POST", "/docs/a/x", "Fencing-Token: 5"),
		rawPost("POST", "/hdr/x", "Fencing-Token: 5", "X-Tenant: 7"),
		rawPost("POST", "/m/x", "Fencing-Token: 5"),
		rawPost("DELETE", "/d/x", "Fencing-Token: 5"),
	} {
		if s, _ := rawExchange(t, p.proxy, raw); s != http.StatusCreated {
			t.Fatalf("%q = %d", raw, s)
		}
	}
	before := len(up.lines())
	for _, c := range []struct {
		name, raw string
		status    int
		problem   string
	}{
		{"lower-case method, no token", rawPost("post", "/m/x"), 400, "bad-method"},
		{"mixed-case method, stale", rawPost("Post", "/m/x", "Fencing-Token: 1"), 400, "bad-method"},
		{"lower-case delete", rawPost("delete", "/tenants/42/x"), 400, "bad-method"},
		{"unknown method is a write", rawPost("PURGE", "/tenants/42/x"), 428, "token-required"},
		// Not the /tenants route: the catch-all, which names no resource here.
		{"prefix without its boundary", rawPost("POST", "/tenants../base/42/pay", "Fencing-Token: 1"), 400, "bad-resource"},
		{"prefix glued to a name", rawPost("POST", "/tenantsX/42", "Fencing-Token: 1", "Fencing-Resource: x"), 201, ""},
		{"encoded slash", rawPost("POST", "/docs/a%2Fb/x", "Fencing-Token: 1"), 400, "bad-path"},
		{"encoded dots", rawPost("POST", "/docs/%2e%2e/x", "Fencing-Token: 1"), 400, "bad-path"},
		{"encoded slash beside a byte Go escapes", rawPost("POST", "/docs/a%2Fb/x\"", "Fencing-Token: 5"), 400, "bad-path"},
		{"encoded backslash", rawPost("POST", "/docs/a%5Cb", "Fencing-Token: 1"), 400, "bad-path"},
		{"resource header in Connection", rawPost("POST", "/hdr/x", "Fencing-Token: 5", "X-Tenant: 7", "Connection: X-Tenant"), 400, "bad-resource"},
		{"underscore twin", rawPost("POST", "/hdr/x", "Fencing-Token: 5", "X-Tenant: 7", "X_Tenant: 8"), 400, "bad-resource"},
		{"repeated resource header", rawPost("POST", "/hdr/x", "Fencing-Token: 5", "X-Tenant: 7", "x-tenant: 8"), 400, "bad-resource"},
		{"list value", rawPost("POST", "/hdr/x", "Fencing-Token: 5", "X-Tenant: 8, 7"), 400, "bad-resource"},
		{"empty segment after the prefix", rawPost("POST", "/tenants//42/pay", "Fencing-Token: 5"), 400, "bad-path"},
		{"empty first segment, stale", rawPost("POST", "/tenants//42", "Fencing-Token: 1"), 400, "bad-path"},
		// A method the route does not fence, claiming one it does (a POST
		// alone passes unfenced on /d/).
		{"POST overriding to DELETE", rawPost("POST", "/d/x", "X-HTTP-Method-Override: DELETE"), 400, "bad-method"},
		{"POST overriding to DELETE, stale", rawPost("POST", "/d/x", "Fencing-Token: 1", "X-HTTP-Method-Override: DELETE"), 400, "bad-method"},
		{"GET overriding to POST", rawPost("GET", "/tenants/42/pay", "X-HTTP-Method-Override: POST"), 400, "bad-method"},
		{"override with underscores", rawPost("GET", "/docs/a/x", "X_HTTP_Method: PUT"), 400, "bad-method"},
		{"X-Method-Override", rawPost("OPTIONS", "/tenants/42", "X-Method-Override: PATCH"), 400, "bad-method"},
		{"override at the current epoch", rawPost("POST", "/tenants/42/pay", "Fencing-Token: 5", "X-Http-Method-Override: DELETE"), 400, "bad-method"},
		{"_method query parameter", rawPost("POST", "/d/x?_method=DELETE"), 400, "bad-method"},
	} {
		s, typ := rawExchange(t, p.proxy, c.raw)
		if s != c.status || (c.problem != "" && typ != "urn:fencegw:problem:"+c.problem) {
			t.Errorf("%s: %d %s, want %d %s", c.name, s, typ, c.status, c.problem)
		}
	}
	got := up.lines()[before:]
	// Only the glued prefix reached the upstream: through the catch-all
	// route, as its own resource.
	if len(got) != 1 || !strings.HasPrefix(got[0], "POST /tenantsX/42 ") || !strings.HasSuffix(got[0], "Fencing-Resource=x") {
		t.Fatalf("the upstream received %q, want only the glued prefix through the catch-all route", got)
	}
	// Stripping keeps one slash: /tenants/42/pay reached /base/42/pay.
	if first := up.lines()[0]; !strings.HasPrefix(first, "POST /base/42/pay ") {
		t.Fatalf("stripped path: %q", first)
	}
}

// TestEpochSourceResourceMustNotBeTheClients: config validation, and
// fencegw serve before it opens or binds anything, refuse a route whose
// epoch source the client could choose, naming the field.
func TestEpochSourceResourceMustNotBeTheClients(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ resource, source, want string }{
		{"{header:X-Election}", `{kind: postgres, dsn: "postgres://app@db/app"}`,
			"routes[0].resource: must not use {header:…} with an epoch_source"},
		{"job-{segment:1}", `{kind: etcd, endpoints: ["127.0.0.1:2379"], prefix: /election/x}`,
			"routes[0].resource: must be a fixed name with an etcd epoch_source"},
	} {
		resource, want := c.resource, c.want
		cfg := filepath.Join(dir, "gw.yaml")
		os.WriteFile(cfg, []byte(fmt.Sprintf(`routes:
  - prefix: /e/
    upstream: http://127.0.0.1:9
    tokens: raw
    resource: %q
    epoch_source: %s
`, resource, c.source)), 0o600)
		_, stderr, code := runCLI(t, "config", "validate", cfg)
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("resource %q: exit %d %s, want %q", resource, code, stderr, want)
		}
		// fencegw serve refuses it too, before opening the store or
		// listening: its addresses are taken, so a serve that got as far
		// as listening would fail otherwise.
		proxyLn, apiLn := holdPort(t), holdPort(t)
		store := filepath.Join(dir, "s.db")
		_, stderr, code = runCLI(t, "serve", "--config", cfg, "--store", store,
			"--listen", proxyLn.Addr().String(), "--api-listen", apiLn.Addr().String())
		if code != 2 || !strings.Contains(stderr, "invalid configuration") || !strings.Contains(stderr, want) {
			t.Errorf("serve with resource %q: exit %d %s, want 2 and %q", resource, code, stderr, want)
		}
		if _, err := os.Stat(store); err == nil {
			t.Errorf("serve with resource %q created the store before refusing", resource)
		}
	}
}

// holdPort binds a loopback port for the rest of the test.
func holdPort(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// TestGrantVisibleMeansFenced: on the embedded store, once any reader can
// see a grant (a lease read shows its epoch), a write at the epoch it
// replaced is refused. Pollers read the lease while leases change hands;
// each time one sees epoch E+1 it writes at E at once and must get 412.
func TestGrantVisibleMeansFenced(t *testing.T) {
	p, _ := signingGateway(t, newRecorder(t, http.StatusCreated).srv.URL)
	type grant struct {
		Epoch wire.Epoch `json:"epoch"`
		Token string     `json:"token"`
	}
	lease := func(op, holder string, epoch int64) grant {
		body := fmt.Sprintf(`{"holder":%q,"ttl_seconds":30}`, holder)
		if op != "acquire" {
			body = fmt.Sprintf(`{"holder":%q,"epoch":%d}`, holder, epoch)
		}
		resp, err := http.Post(p.api+"/v1/leases/jobs/"+op, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var g grant
		json.NewDecoder(resp.Body).Decode(&g)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s by %s: %d", op, holder, resp.StatusCode)
		}
		return g
	}
	var (
		mu     sync.Mutex
		tokens = map[int64]string{}
		bad    []string
		checks int
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := http.Get(p.api + "/v1/leases/jobs")
				if err != nil {
					continue
				}
				var g grant
				json.NewDecoder(resp.Body).Decode(&g)
				resp.Body.Close()
				mu.Lock()
				old := tokens[int64(g.Epoch)-1]
				mu.Unlock()
				if old == "" {
					continue
				}
				s, _ := rawExchange(t, p.proxy, rawPost("POST", "/s/x", "Fencing-Token: "+old))
				mu.Lock()
				checks++
				if s != http.StatusPreconditionFailed {
					bad = append(bad, fmt.Sprintf("epoch %d after epoch %d was visible: %d", g.Epoch-1, g.Epoch, s))
				}
				mu.Unlock()
			}
		}()
	}
	holders := []string{"node-a", "node-b"}
	for i := 0; i < 40; i++ {
		g := lease("acquire", holders[i%2], 0)
		mu.Lock()
		tokens[int64(g.Epoch)] = g.Token
		mu.Unlock()
		lease("release", holders[i%2], int64(g.Epoch))
	}
	close(stop)
	wg.Wait()
	if len(bad) > 0 || checks == 0 {
		t.Fatalf("%d checks; refused late: %q", checks, bad)
	}
}
