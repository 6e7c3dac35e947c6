package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// apiKey runs `fencegw keys api-key` and returns the key and its api_keys
// entry (without the api_keys: line).
func apiKey(t *testing.T, args ...string) (key, entry string) {
	t.Helper()
	out, stderr, code := runCLI(t, append([]string{"keys", "api-key"}, args...)...)
	if code != 0 {
		t.Fatalf("keys api-key %v: %d %s", args, code, stderr)
	}
	// The key alone on stdout, the entry on stderr (the key used to stand
	// in a comment of the entry, both on stdout).
	m := regexp.MustCompile(`^(fgw_\S+)\n$`).FindStringSubmatch(out)
	_, entry, ok := strings.Cut(stderr, "api_keys:\n")
	if m == nil || !ok {
		t.Fatalf("keys api-key output:\n%s\nstderr:\n%s", out, stderr)
	}
	return m[1], entry
}

// controlAnswer is an answer of the control API.
type controlAnswer struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

func controlCall(t *testing.T, method, url, key, body string) controlAnswer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := controlAnswer{status: resp.StatusCode, header: resp.Header, raw: raw}
	if len(raw) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber() // epochs near 2^63 do not fit a float64
		if err := dec.Decode(&a.body); err != nil {
			t.Fatalf("%s %s: %d %q: %v", method, url, resp.StatusCode, raw, err)
		}
	}
	return a
}

// TestLeaseOwnershipThroughTheBinary: issue 5 through the binary. Two keys
// are allowed the same leases; key two can read key one's lease (epoch
// included) but its renew, release and acquire are 403 lease-owned without
// a token, also after a SIGKILL and a restart; the admin key may; a free
// lease is key two's to take.
func TestLeaseOwnershipThroughTheBinary(t *testing.T) {
	one, oneEntry := apiKey(t, "--name", "key-one", "--leases", "invoice-*")
	two, twoEntry := apiKey(t, "--name", "key-two", "--leases", "invoice-*")
	ops, opsEntry := apiKey(t, "--name", "ops", "--admin")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gw.yaml")
	store := filepath.Join(dir, "s.db")
	os.WriteFile(cfg, []byte("routes:\n  - prefix: /w/\n    upstream: http://127.0.0.1:9\napi_keys:\n"+oneEntry+twoEntry+opsEntry), 0o600)
	gw := start(t, "--config", cfg, "--store", store)

	lease := func(p *proc, op string) string { return p.api + "/v1/leases/invoice-sweeper/" + op }
	acquire := `{"holder":"node-a","ttl_seconds":60}`
	a := controlCall(t, "POST", lease(gw, "acquire"), one, acquire)
	if a.status != http.StatusOK || a.body["owner"] != "key-one" || a.body["token"] == nil {
		t.Fatalf("key one's acquire = %d %s", a.status, a.raw)
	}
	epoch := a.body["epoch"].(string)
	held := `{"holder":"node-a","epoch":` + epoch + `}`

	refusedForKeyTwo := func(t *testing.T, p *proc) {
		t.Helper()
		g := controlCall(t, "GET", p.api+"/v1/leases/invoice-sweeper", two, "")
		if g.status != http.StatusOK || g.body["owner"] != "key-one" || g.body["epoch"].(string) != epoch || g.body["token"] != nil {
			t.Fatalf("GET by key two = %d %s", g.status, g.raw)
		}
		for op, body := range map[string]string{"renew": held, "release": held, "acquire": acquire} {
			r := controlCall(t, "POST", lease(p, op), two, body)
			if r.status != http.StatusForbidden || r.body["type"] != "urn:fencegw:problem:lease-owned" ||
				r.body["owner"] != "key-one" || bytes.Contains(r.raw, []byte(`"token`)) {
				t.Fatalf("key two's %s = %d %s, want 403 lease-owned without a token", op, r.status, r.raw)
			}
		}
	}
	refusedForKeyTwo(t, gw)

	// The binding is in the store: a killed and restarted gateway keeps it.
	gw.cmd.Process.Signal(syscall.SIGKILL)
	gw.wait(t)
	gw = start(t, "--config", cfg, "--store", store)
	refusedForKeyTwo(t, gw)

	if r := controlCall(t, "POST", lease(gw, "renew"), one, held); r.status != http.StatusOK || r.body["token"] == nil {
		t.Fatalf("key one's renew after the restart = %d %s", r.status, r.raw)
	}
	if r := controlCall(t, "POST", lease(gw, "renew"), ops, held); r.status != http.StatusOK || r.body["owner"] != "key-one" {
		t.Fatalf("admin's renew = %d %s", r.status, r.raw)
	}
	if r := controlCall(t, "POST", lease(gw, "release"), ops, held); r.status != http.StatusNoContent {
		t.Fatalf("admin's release = %d %s", r.status, r.raw)
	}
	if r := controlCall(t, "POST", lease(gw, "acquire"), two, acquire); r.status != http.StatusOK || r.body["owner"] != "key-two" {
		t.Fatalf("key two's takeover of the released lease = %d %s", r.status, r.raw)
	}
	if !strings.Contains(gw.stderr.String(), "owned by another key") {
		t.Errorf("the refusals were not logged:\n%s", gw.stderr.String())
	}
}

// TestEpochExhaustedThroughTheBinary: issue 6 through the binary. A raw
// write at 2^63-1 on a resource never leased is admitted; acquiring the name
// then answers 409 epoch-exhausted without Retry-After, every time, and
// changes nothing.
func TestEpochExhaustedThroughTheBinary(t *testing.T) {
	up := okUpstream(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gw.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
routes:
  - prefix: "/raw/"
    upstream: %q
    tokens: raw
    resource: "spent"
`, up.URL)), 0o600)
	gw := start(t, "--config", cfg, "--store", filepath.Join(dir, "s.db"))
	const top = "9223372036854775807"
	if s := post(t, gw.proxy+"/raw/x", top, ""); s != http.StatusNoContent {
		t.Fatalf("raw write at 2^63-1 = %d", s)
	}
	for i := 0; i < 3; i++ {
		a := controlCall(t, "POST", gw.api+"/v1/leases/spent/acquire", "", `{"holder":"node-a","ttl_seconds":15}`)
		if a.status != http.StatusConflict || a.header.Get("Retry-After") != "" {
			t.Fatalf("acquire %d = %d (Retry-After %q) %s, want 409 without Retry-After", i, a.status,
				a.header.Get("Retry-After"), a.raw)
		}
		if a.body["type"] != "urn:fencegw:problem:epoch-exhausted" || a.body["current_epoch"].(string) != top ||
			a.body["token"] != nil {
			t.Fatalf("acquire %d problem = %s", i, a.raw)
		}
	}
	if g := controlCall(t, "GET", gw.api+"/v1/leases/spent", "", ""); g.status != http.StatusNotFound {
		t.Fatalf("GET after refused acquires = %d %s", g.status, g.raw)
	}
	// Another name is unaffected: the operator's way out.
	if a := controlCall(t, "POST", gw.api+"/v1/leases/spent-v2/acquire", "", `{"holder":"node-a","ttl_seconds":15}`); a.status != http.StatusOK {
		t.Fatalf("acquire of a new name = %d %s", a.status, a.raw)
	}
}
