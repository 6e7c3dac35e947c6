package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/config"
)

const good = `
listen: "127.0.0.1:8080"
api_listen: "127.0.0.1:8081"
store: "fencegw.db"
store_timeout: 3s
routes:
  - prefix: "/email/"
    upstream: "http://127.0.0.1:9000"
    tokens: raw
    resource: "invoice-sweeper"
  - prefix: "/tenants/"
    host: api.example.com
    upstream: "https://mail.example.com/v1"
    resource: "tenant-{segment:1}"
    methods: [POST, GET]
    strip_prefix: true
`

func TestParseGood(t *testing.T) {
	c, err := config.Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.StoreTimeout.D() != 3*time.Second || c.ShutdownTimeout.D() != 30*time.Second {
		t.Fatalf("durations: %v %v", c.StoreTimeout.D(), c.ShutdownTimeout.D())
	}
}

func TestValidationNamesTheField(t *testing.T) {
	cases := map[string]string{
		"tls: {cert_file: a.pem}":                                                                                               "tls: cert_file and key_file are both required",
		"tls: {cert_file: /nonexistent, key_file: /nonexistent}":                                                                "tls.cert_file: cannot load",
		"api_tls: {cert_file: a, key_file: b, client_ca_file: /nonexistent}":                                                    "api_tls.client_ca_file:",
		"routes: [{prefix: /a/, upstream: \"http://a\", tls: {server_name: x}}]":                                                "routes[0].tls: needs an https upstream",
		"routes: [{prefix: /a/, upstream: \"https://a\", tls: {ca_file: /nonexistent}}]":                                        "routes[0].tls.ca_file:",
		"routes: [{prefix: /a/, upstream: \"http://a\", tokens: raw, epoch_source: {kind: postgres, dsn: \"postgres://x/y\"}}]": "routes[0].resource: required with an epoch_source",
		"store: \"host=localhost dbname=x\"":                                                                                    "store: looks like a keyword/value DSN",
		"store: \"etcd://\"":                                                                                                    "store:",
		"store: \"postgres://a b\"":                                                                                             "store: not a valid postgres URL",
		"api_listen: \"0.0.0.0:8081\"":                                                                                          "api_listen: 0.0.0.0:8081 is not a loopback address",
		"signing: {token_lifetime: 0s}":                                                                                         "signing.token_lifetime: must be from 1s",
		"signing: {algorithm: RS256}":                                                                                           "signing.algorithm: must be EdDSA, ES256 or HS256",
		"api_keys: [{name: a, sha256: xyz, leases: [\"a*\"]}]":                                                                  "api_keys[0].sha256: must be 64 hex digits",
		"api_keys: [{name: \"a\\tb\", admin: true, sha256: \"" + strings.Repeat("ab", 32) + "\"}]":                              "api_keys[0].name: \"a\\tb\": at most 256 bytes",
		"api_keys: [{name: a, sha256: \"" + strings.Repeat("ab", 32) + "\"}]":                                                   "api_keys[0].leases: a non-admin key needs",
		"routes: [{prefix: /a/, upstream: \"http://a\", epoch_source: {kind: postgres, dsn: \"postgres://x/y\"}}]":              "routes[0].epoch_source: needs tokens: raw",
		"routes: [{prefix: /a/, upstream: \"http://a\", tokens: raw, resource: r, epoch_source: {kind: zk}}]":                   "routes[0].epoch_source.kind: must be postgres, etcd, redis, zookeeper or kubernetes, got \"zk\"; did you mean \"zookeeper\"?",
		"routes: [{prefix: /a/, upstream: \"http://a\", tokens: raw, resource: r, epoch_source: {kind: etcd}}]":                 "routes[0].epoch_source.endpoints: at least one",
		"routes: [{prefix: /a/, upstream: \"http://a\", tokens: raw, resource: r, epoch_source: {kind: postgres, dsn: x}}]":     "routes[0].epoch_source.dsn: must be a postgres:// URL",
		"listen: nope":                   "listen: not a host:port",
		"api_listen: \"127.0.0.1:8080\"": "api_listen: must differ from listen",
		"store: \"redis://x\"":           "store: unknown store URL scheme",
		"store: \"\"":                    "store: required",
		"store_timeout: 0s":              "store_timeout: must be a positive duration",
		"log_level: loud":                "log_level: must be",
		"routes: []":                     "routes: at least one route is required",
		"routes: [{prefix: email, upstream: \"http://a\"}]":                                          "routes[0].prefix: must start with /",
		"routes: [{prefix: /a/, upstream: \"ftp://a\"}]":                                             "routes[0].upstream: not an absolute http(s) URL",
		"routes: [{prefix: /a/, upstream: \"http://a\"}, {prefix: /b/, upstream: \"/rel\"}]":         "routes[1].upstream: not an absolute http(s) URL",
		"routes: [{prefix: /a/, upstream: \"http://a\", tokens: jwt}]":                               "routes[0].tokens: must be signed, raw or any",
		"routes: [{prefix: /a/, upstream: \"http://a\", resource: \"x{\"}]":                          "routes[0].resource: unclosed",
		"routes: [{prefix: /a/, upstream: \"http://a\", resource: \"t-{header:X-Forwarded-Host}\"}]": "routes[0].resource: placeholder at offset 2: {header:X-Forwarded-Host}: X-Forwarded-Host cannot name a resource",
		"routes: [{prefix: /a/, upstream: \"http://a\", resource: \"{header:traceparent}\"}]":        "routes[0].resource: placeholder at offset 0: {header:traceparent}: Traceparent cannot name a resource",
		"routes: [{prefix: /a/, upstream: \"http://a\", methods: [post]}]":                           "routes[0].methods[0]: \"post\" is not an HTTP method",
		"routes: [{prefix: /a/, upstream: \"http://a\"}, {prefix: /a/, upstream: \"http://b\"}]":     "routes[1].prefix: routes[0] already serves",
		"routes: [{prefix: /a/../b/, upstream: \"http://a\"}]":                                       "routes[0].prefix:",
		"audit: {interval: 500ms}":                       "audit.interval: must be from 1s to 1h",
		"audit: {flush: 2m}":                             "audit.flush: must be from 10ms to 1m",
		"audit: {max_pending: 5}":                        "audit.max_pending: is replaced by audit.history.max_pending and audit.junk.max_pending",
		"audit: {history: {max_pending: 5}}":             "audit.history.max_pending: must be from 100",
		"audit: {junk: {max_entries: 99}}":               "audit.junk.max_entries: must be from 100",
		"audit: {retention: 10s}":                        "audit.retention: must be from 1m",
		"audit: {max_entries: 100}":                      "audit.max_entries: is replaced by audit.history.max_entries",
		"audit: {replica: \"a\\tb\"}":                    "audit.replica: must be at most 128 printable",
		"ui: {trace_url: \"https://tracing.example/x\"}": "ui.trace_url: must contain {trace_id}",
		"ui: {trace_url: \"/trace/{trace_id}\"}":         "ui.trace_url: must be an absolute http or https URL",
		"ui: {trace_url: \"javascript:{trace_id}\"}":     "ui.trace_url: must be an absolute http or https URL",
		"watch: {write_timeout: 10ms}":                   "watch.write_timeout: must be from 100ms to 10m",
		"watch: {max_watchers: 0}":                       "watch.max_watchers: must be from 1 to 1000000",
		"log_refusals_per_second: 0":                     "log_refusals_per_second: must be from 1 to 10000",
	}
	for yml, want := range cases {
		doc := yml
		if !strings.HasPrefix(yml, "routes") {
			doc = yml + "\nroutes: [{prefix: /a/, upstream: \"http://127.0.0.1:9\"}]"
		}
		expectFieldError(t, yml, doc, want)
	}
}

func TestParseRefusesUnknownAndMalformed(t *testing.T) {
	for yml, want := range map[string]string{
		"lisen: x":                  "field lisen not found",
		"routes: [{prefx: /a/}]":    "field prefx not found",
		"store_timeout: soon":       "is not a duration",
		"max_body_bytes: lots":      "cannot unmarshal",
		"a: 1\n---\nb: 2":           "more than one YAML document",
		"listen: x\n---\nlisten: y": "more than one YAML document",
	} {
		_, err := config.Parse([]byte(yml))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", yml, err, want)
		}
	}
	if c, err := config.Parse(nil); err != nil || c.Listen != "127.0.0.1:8080" {
		t.Errorf("empty file: %+v, %v", c, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("routes: [{prefix: /a/, upstream: \"http://a\"}]"))
	f.Add([]byte("store_timeout: 1h\nmax_body_bytes: -1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse(data)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			var fe *config.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("validation error %v names no field", err)
			}
		}
	})
}

func TestEnvExpansion(t *testing.T) {
	env := map[string]string{"DB_PASSWORD": "s3cr#t: x", "PORT": "9090", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	c, err := config.ParseEnv([]byte(`
listen: "127.0.0.1:${PORT}"
store: "postgres://gw:${DB_PASSWORD}@db/fencegw"
api_listen: "127.0.0.1:${API_PORT:-8181}"
log_level: "${EMPTY:-debug}"
routes:
  - prefix: "/a/"
    upstream: "http://127.0.0.1:9000"
    resource: "cost-$$5"
`), lookup)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9090" || c.Store != "postgres://gw:s3cr#t: x@db/fencegw" || c.APIListen != "127.0.0.1:8181" ||
		c.LogLevel != "debug" || c.Routes[0].Resource != "cost-$5" {
		t.Fatalf("expanded: %+v", c)
	}
	for doc, want := range map[string]string{
		"store: \"${MISSING}\"":           "environment variable MISSING is not set",
		"store: \"${1BAD}\"":              "not a variable name",
		"store: \"${UNCLOSED\"":           "unclosed ${",
		"routes: [{prefix: \"${NOPE}\"}]": "line 1: ${NOPE}",
	} {
		if _, err := config.ParseEnv([]byte(doc), lookup); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}

func TestExampleValidates(t *testing.T) {
	c, err := config.ParseEnv([]byte(config.Example), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(c.Routes) != 3 || c.Routes[2].EpochSource == nil {
		t.Fatalf("example routes = %+v", c.Routes)
	}
}

func TestCheckTraceURL(t *testing.T) {
	for _, ok := range []string{
		"",
		"https://tracing.example/trace/{trace_id}",
		"http://127.0.0.1:16686/trace/{trace_id}",
		"https://grafana.example/explore?left=%7B%22queries%22:%5B%7B%22query%22:%22{trace_id}%22%7D%5D%7D",
		"https://tracing.example/#/trace/{trace_id}?x={trace_id}",
	} {
		if err := config.CheckTraceURL(ok); err != nil {
			t.Errorf("CheckTraceURL(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{
		"https://tracing.example/trace/",   // no placeholder
		"/trace/{trace_id}",                // not absolute
		"tracing.example/trace/{trace_id}", // no scheme
		"javascript:alert('{trace_id}')",   // not http(s)
		"ftp://tracing.example/{trace_id}", // not http(s)
		"https:///trace/{trace_id}",        // no host
		"https:tracing.example/{trace_id}", // opaque: no host
		"https://tracing.example/trace/{trace_id",
		"https://tracing.example/trace/\n{trace_id}", // control character
		"https://trac ing.example/{trace_id}",        // not a host name
	} {
		if err := config.CheckTraceURL(bad); err == nil {
			t.Errorf("CheckTraceURL(%q) accepted it", bad)
		}
	}
}
