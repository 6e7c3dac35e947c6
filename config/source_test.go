package config_test

import (
	"strings"
	"testing"

	"github.com/fencegw/fencegw/config"
)

// validateRoute validates a configuration whose only route is a raw route
// with resource and the epoch_source given as YAML flow.
func validateRoute(t *testing.T, resource, src string) error {
	t.Helper()
	doc := "routes: [{prefix: /jobs/, upstream: \"http://127.0.0.1:9\", tokens: raw, resource: " +
		resource + ", epoch_source: " + src + "}]"
	c, err := config.Parse([]byte(doc))
	if err != nil {
		return err
	}
	return c.Validate()
}

// TestRedisEpochSource: kind redis needs a parseable address, takes an
// optional key, refuses the other kinds' keys and theirs refuse its own; a
// key without {resource} needs a fixed resource, as etcd does.
func TestRedisEpochSource(t *testing.T) {
	for _, ok := range []struct{ resource, src string }{
		{"report", `{kind: redis, address: "127.0.0.1:6379"}`},
		{"report", `{kind: redis, address: "rediss://fencegw:pw@cache.internal:6380/2", key: "locks:{resource}"}`},
		{"report", `{kind: redis, address: "redis://db", key: "the-one-lock"}`},
		{"\"tenant-{segment:1}\"", `{kind: redis, address: "db:6379"}`},
		{"\"tenant-{segment:1}\"", `{kind: redis, address: "db:6379", key: "lock/{resource}"}`},
	} {
		if err := validateRoute(t, ok.resource, ok.src); err != nil {
			t.Errorf("%s with resource %s: %v", ok.src, ok.resource, err)
		}
	}
	for _, tc := range []struct{ resource, src, want string }{
		{"r", `{kind: redis}`, "routes[0].epoch_source.address: the Redis primary is required"},
		{"r", `{kind: redis, address: db}`, "routes[0].epoch_source.address: address \"db\": want host:port"},
		{"r", `{kind: redis, address: "db:0"}`, "routes[0].epoch_source.address: address: port"},
		{"r", `{kind: redis, address: "unix:///run/redis.sock"}`, "routes[0].epoch_source.address: address: scheme \"unix\""},
		{"r", `{kind: redis, address: "redis://:hunter22@db/x"}`, "routes[0].epoch_source.address: address: redis: invalid database number"},
		{"r", `{kind: redis, address: "db:6379", dsn: "postgres://x/y"}`, "routes[0].epoch_source.dsn: dsn and table are for kind postgres"},
		{"r", `{kind: redis, address: "db:6379", prefix: /e}`, "routes[0].epoch_source.endpoints: endpoints and prefix are for kind etcd"},
		{"r", `{kind: postgres, dsn: "postgres://x/y", key: k}`, "routes[0].epoch_source.address: address and key are for kind redis"},
		{"r", `{kind: etcd, endpoints: ["e:2379"], prefix: /e, address: "db:6379"}`, "routes[0].epoch_source.address: address and key are for kind redis"},
		{"\"tenant-{segment:1}\"", `{kind: redis, address: "db:6379", key: "one-lock"}`,
			"routes[0].resource: must be a fixed name with a redis epoch_source whose key has no {resource}"},
		{"\"{header:X-Tenant}\"", `{kind: redis, address: "db:6379"}`, "routes[0].resource: must not use {header:…}"},
	} {
		err := validateRoute(t, tc.resource, tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s with resource %s:\n  got  %v\n  want %q", tc.src, tc.resource, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter22") {
			t.Errorf("%s: the error %q repeats the password", tc.src, err)
		}
	}
}
